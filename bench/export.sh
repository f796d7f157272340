#!/usr/bin/env bash
# Account export benchmark (bench/README.md, "Account export"): a release server on loopback with a throwaway
# PostgreSQL; one account with BENCH_EXPORT_MB (1024) MiB of photos in 64 MiB assets. Measures, in one run: the
# server's RSS while a device downloads the export (users/export, sampled from /proc every 50 ms), the operator CLI's
# peak RSS exporting the same account (stadiumcloud accounts export) and importing it into a fresh account (accounts
# import), each one's MiB/s, and the disk's own write speed (dd with fdatasync) to compare with. BENCH_BIN runs a
# stadiumcloud binary already built instead of building the release one.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/postgres.sh
source scripts/lib/bench-server.sh
ensure_packages
bin="$(bench_binary)"
size_mb="${BENCH_EXPORT_MB:-1024}"
asset_mb=64
count=$(( (size_mb + asset_mb - 1) / asset_mb ))
bench_start_server "$bin" --max-asset-mb $((asset_mb * 2))
work="$bench_work"
server_pid="$bench_server_pid"

base="$bench_url/database/1/iCloud.com.sportstime.bench/development/private"
query="ckAPIToken=$api_token&ckWebAuthToken=$web_token"
# The photos: different bytes each, uploaded and referenced by one record each.
for i in $(seq 1 "$count"); do
    head -c $((asset_mb * 1024 * 1024)) /dev/urandom > "$work/photo.bin"
    url=$(curl -sf -X POST "$base/assets/upload?$query" -d '{"tokens":[{"recordType":"VisitPhoto","fieldName":"photo"}]}' \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"][0]["url"])')
    receipt=$(curl -sf -T "$work/photo.bin" -X POST "$url" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["singleFile"]))')
    curl -sf -X POST "$base/records/modify?$query" \
        -d "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"photo-$i\",\"recordType\":\"VisitPhoto\",\"fields\":{\"photo\":{\"value\":$receipt,\"type\":\"ASSET\"},\"caption\":{\"value\":\"photo $i\"}}}}]}" \
        >/dev/null
done
rm -f "$work/photo.bin"
disk=$(dd if=/dev/zero of="$work/dd.out" bs=1M count=1024 conv=fdatasync 2>&1 | awk '/copied/ {print $(NF-1), $NF}')
rm -f "$work/dd.out"

# A device downloads the export; the server's RSS is sampled meanwhile.
rss_before=$(awk '/VmRSS/ {print $2}' /proc/$server_pid/status)
( while kill -0 $server_pid 2>/dev/null; do awk '/VmRSS/ {print $2}' /proc/$server_pid/status; sleep 0.05; done ) > "$work/rss" &
sampler=$!
served=$(curl -sf -o "$work/served.tar" -w "%{time_total}" -X POST "$base/users/export?$query" -d '{}')
kill $sampler 2>/dev/null || true
peak=$(sort -n "$work/rss" | tail -n 1)
tar -tf "$work/served.tar" | grep -qx manifest.json || { echo "the served export has no manifest" >&2; exit 1; }
rm -f "$work/served.tar"

# The operator's CLI, export then import into a fresh account.
/usr/bin/time -f "%e %M" -o "$work/export.time" "$bin" accounts export bench -o "$work/cli.tar" --assets "$work/assets" >/dev/null
"$bin" accounts create bench-copy >/dev/null 2>&1
/usr/bin/time -f "%e %M" -o "$work/import.time" "$bin" accounts import bench-copy "$work/cli.tar" --assets "$work/assets" >/dev/null
archive_mb=$(( $(stat -c %s "$work/cli.tar") / 1024 / 1024 ))

python3 - "$size_mb" "$archive_mb" "$served" "$rss_before" "$peak" "$(cat "$work/export.time")" "$(cat "$work/import.time")" "$disk" <<'PY'
import sys
size, archive, served, before, peak, export, imported, disk = sys.argv[1:9]
size = float(size); archive = float(archive); served = float(served)
export_s, export_kb = map(float, export.split()); import_s, import_kb = map(float, imported.split())
value, unit = disk.split()
disk_mbs = float(value) * {"GB/s": 1000, "MB/s": 1, "kB/s": 0.001}[unit] / 1.048576
print(f"\nStadiumCloud account export benchmark (release build, {size:.0f} MiB of photos, {archive:.0f} MiB archive, loopback, one 2-core machine)")
print(f"disk write (dd, fdatasync)           {disk_mbs:8.0f} MiB/s")
print(f"users/export to curl                 {archive / served:8.0f} MiB/s   server RSS {int(before) / 1024:.1f} MiB before, {int(peak) / 1024:.1f} MiB peak, growth {(int(peak) - int(before)) / 1024:.1f} MiB")
print(f"stadiumcloud accounts export         {archive / export_s:8.0f} MiB/s   peak RSS {export_kb / 1024:.1f} MiB")
print(f"stadiumcloud accounts import         {archive / import_s:8.0f} MiB/s   peak RSS {import_kb / 1024:.1f} MiB (checks the whole archive, then writes it)")
print("(goal: memory flat whatever the account holds: RSS growth and peak RSS far below the archive's size)")
PY
