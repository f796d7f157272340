#!/usr/bin/env bash
# Asset benchmark: release server on loopback, a throwaway PostgreSQL, and in the same run the disk's own write
# speed (dd with fdatasync). Prints upload and download MB/s, their ratio to the disk, and the server's RSS growth
# during a 1 GB upload (sampled from /proc every 50 ms). BENCH_ASSET_MB sizes the file (default 1024).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/postgres.sh
source scripts/lib/bench-server.sh
ensure_packages

swift build -c release --product stadiumcloud >&2
bin="$(swift build -c release --show-bin-path)/stadiumcloud"
size_mb="${BENCH_ASSET_MB:-1024}"
bench_start_server "$bin" --max-asset-mb $((size_mb * 2))
work="$bench_work"
server_pid="$bench_server_pid"

head -c $((size_mb * 1024 * 1024)) /dev/urandom > "$work/photo.bin"
disk_mbs=$(dd if="$work/photo.bin" of="$work/dd.out" bs=1M conv=fdatasync 2>&1 | awk '/copied/ {print $(NF-1), $NF}')
rm -f "$work/dd.out"

base="$bench_url/database/1/iCloud.com.sportstime.bench/development/private"
query="ckAPIToken=$api_token&ckWebAuthToken=$web_token"
url=$(curl -s -X POST "$base/assets/upload?$query" -d '{"tokens":[{"recordType":"VisitPhoto","fieldName":"photo"}]}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"][0]["url"])')
rss_before=$(awk '/VmRSS/ {print $2}' /proc/$server_pid/status)
peak=$rss_before
( while kill -0 $server_pid 2>/dev/null; do awk '/VmRSS/ {print $2}' /proc/$server_pid/status; sleep 0.05; done ) > "$work/rss" &
sampler=$!
upload=$(curl -s -o "$work/up.json" -w "%{time_total}" -T "$work/photo.bin" -X POST "$url")
kill $sampler 2>/dev/null || true
peak=$(sort -n "$work/rss" | tail -n 1)
receipt=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["singleFile"]))' "$work/up.json")
download_url=$(curl -s -X POST "$base/records/modify?$query" \
    -d "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"p\",\"recordType\":\"VisitPhoto\",\"fields\":{\"photo\":{\"value\":$receipt,\"type\":\"ASSET\"}}}}]}" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["records"][0]["fields"]["photo"]["value"]["downloadURL"].replace("${f}", "photo.bin"))')
download=$(curl -s -o "$work/down.bin" -w "%{time_total}" "$download_url")
cmp -s "$work/photo.bin" "$work/down.bin" || { echo "downloaded bytes differ" >&2; exit 1; }

python3 - "$size_mb" "$upload" "$download" "$disk_mbs" "$rss_before" "$peak" <<'PY'
import sys
size, up, down, disk, before, peak = sys.argv[1:7]
size = float(size); up = float(up); down = float(down)
value, unit = disk.split()
disk_mbs = float(value) * {"GB/s": 1000, "MB/s": 1, "kB/s": 0.001}[unit] / 1.048576
print(f"\nStadiumCloud asset benchmark (release build, {size:.0f} MiB file, loopback, one 2-core machine)")
print(f"disk write (dd, fdatasync)      {disk_mbs:8.0f} MiB/s")
print(f"upload (curl -T, fsync, SHA-256) {size / up:8.0f} MiB/s   {size / up / disk_mbs * 100:4.0f} % of the disk")
print(f"download (curl)                 {size / down:8.0f} MiB/s")
print(f"server RSS during the upload    {int(before) / 1024:8.1f} MiB before, {int(peak) / 1024:.1f} MiB peak, growth {(int(peak) - int(before)) / 1024:.1f} MiB")
print("(goals: upload >= 80 % of the disk, RSS growth < 50 MB)")
PY
