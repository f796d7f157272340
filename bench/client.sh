#!/usr/bin/env bash
# Client SDK benchmark: release server with the canonical data on a throwaway PostgreSQL, then
# stadiumcloud-client-bench: first sync, queueing visits, push and pull, each next to the same requests sent as
# plain HTTP in the same run. BENCH_VISITS (default 2000, a multiple of 200) sizes the push.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/postgres.sh
source scripts/lib/bench-server.sh
ensure_packages

swift build -c release --product stadiumcloud >&2
swift build -c release --product stadiumcloud-client-bench >&2
bin="$(swift build -c release --show-bin-path)"
bench_start_server "$bin/stadiumcloud"
"$bin/stadiumcloud" schema apply Resources/schema.json >/dev/null
"$bin/stadiumcloud" import Resources/canonical --container iCloud.com.sportstime.bench | tail -n 1
password="bench-$(date +%s)"
echo "$password" | "$bin/stadiumcloud" accounts create benchclient --password-stdin >/dev/null 2>&1

BENCH_SERVER="$bench_url" BENCH_API_TOKEN="$api_token" BENCH_ACCOUNT=benchclient BENCH_PASSWORD="$password" \
    "$bin/stadiumcloud-client-bench"
