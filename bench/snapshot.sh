#!/usr/bin/env bash
# Snapshot benchmark (bench/README.md, "Snapshots"): a release server on loopback with the whole canonical dataset
# (every season of games) in a throwaway PostgreSQL. Measures the size and making time of signed snapshots (canonical
# data alone; with this season's NBA and NFL games; every listed zone), then a device that follows those two seasons:
# its bootstrap from the snapshot (no network) and the sync after it, against a fresh device's whole first sync, in
# the same run. BENCH_BIN_DIR runs binaries already built (stadiumcloud and stadiumcloud-client, release).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/postgres.sh
source scripts/lib/bench-server.sh
ensure_packages
if [ -n "${BENCH_BIN_DIR:-}" ]; then
    bin="$BENCH_BIN_DIR"
else
    swift build -c release --product stadiumcloud >&2
    swift build -c release --product stadiumcloud-client >&2
    bin="$(swift build -c release --show-bin-path)"
fi
container=iCloud.com.sportstime.bench
bench_start_server "$bin/stadiumcloud"
work="$bench_work"
"$bin/stadiumcloud" schema apply Resources/schema.json --container "$container" >/dev/null
"$bin/stadiumcloud" import Resources/canonical --container "$container" | tail -n 1
export STADIUMCLOUD_PASSWORD="bench-$(date +%s)"
echo "$STADIUMCLOUD_PASSWORD" | "$bin/stadiumcloud" accounts create device --password-stdin >/dev/null 2>&1
export STADIUMCLOUD_API_TOKEN="$api_token"

"$bin/stadiumcloud" snapshot keygen --out "$work/snapshot-key.pem" | sed '/^key id/d' >"$work/snapshot-key.pub"
seasons=(nba_2026 nfl_2026)
make() {  # NAME ZONE… : makes a snapshot, prints "NAME bytes records seconds"
    local name="$1"
    shift
    local zones=() zone
    for zone in "$@"; do zones+=(--zone "$zone"); done
    local start end line
    start=$(date +%s.%N)
    line=$("$bin/stadiumcloud" snapshot make --key "$work/snapshot-key.pem" --out "$work/$name.snapshot" --container "$container" "${zones[@]}")
    end=$(date +%s.%N)
    echo "$name $(stat -c %s "$work/$name.snapshot") $(sed -n 's/.* zone(s), \([0-9]*\) record(s).*/\1/p' <<<"$line") $(echo "$end - $start" | bc)"
}
{
    make canonical _defaultZone
    make current _defaultZone "${seasons[@]/#/games_}"
    make all
} >"$work/sizes"

device() { "$bin/stadiumcloud-client" "$@" --store "$work/$store.sqlite"; }
timed() {  # prints the seconds a command took
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s.%N)
    echo "$end - $start" | bc
}
store=fresh
device signin device --server "$bench_url" --container "$container" >/dev/null
device seasons "${seasons[@]}" >/dev/null
first_sync=$(timed device sync)
store=bootstrapped
device signin device --server "$bench_url" --container "$container" >/dev/null
device seasons "${seasons[@]}" >/dev/null
bootstrap=$(timed device bootstrap "$work/current.snapshot" --key "$work/snapshot-key.pub")
after=$(timed device sync)

python3 - "$work/sizes" "$first_sync" "$bootstrap" "$after" <<'PY'
import sys
sizes = [line.split() for line in open(sys.argv[1])]
first, boot, after = map(float, sys.argv[2:5])
print("\nStadiumCloud snapshot benchmark (release build, the whole canonical dataset, loopback, one 2-core machine)")
print(f"{'snapshot':42} {'bytes':>12} {'records':>9} {'made in':>9}")
labels = {"canonical": "canonical data (_defaultZone)", "current": "+ NBA 2026-27 and NFL 2026 games", "all": "every listed zone (all seasons)"}
for name, size, records, seconds in sizes:
    print(f"{labels[name]:42} {int(size):12,} {int(records):9,} {float(seconds):8.2f}s")
print(f"\ndevice following NBA 2026-27 and NFL 2026:")
print(f"  first sync from the server (no snapshot)  {first:6.2f} s")
print(f"  bootstrap from the snapshot, no network   {boot:6.2f} s")
print(f"  then its first sync (nothing changed)     {after:6.2f} s   ({first / max(after, 0.001):.0f}x less than the first sync)")
PY
