#!/usr/bin/env bash
# Live sync: commit-to-wake latency in one process and across two (PostgreSQL LISTEN/NOTIFY), and
# 10,000 idle changes/wait requests on one process: resident memory per waiter, CPU and database transactions
# while they wait, and the write path's throughput beside them. Two release servers on one throwaway PostgreSQL
# (fsync off, as bench/run.sh); the client is bench/live.py (asyncio, raw HTTP). BENCH_ROUNDS (200) and
# BENCH_WAITERS (10000) tune it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/postgres.sh
source scripts/lib/bench-server.sh
ensure_packages
swift build -c release --product stadiumcloud
bin="$(swift build -c release --show-bin-path)"
ulimit -n 20000 2>/dev/null || true
bench_start_server "$bin/stadiumcloud" --waiters-per-account 20000
second_port="$(free_port 18580)"
LOG_LEVEL=warning "$bin/stadiumcloud" serve --port "$second_port" --assets "$bench_work/assets" \
    --container iCloud.com.sportstime.bench --account-rate-limit 1000000 --token-rate-limit 1000000 &
second_pid=$!
trap 'kill $second_pid 2>/dev/null; bench_stop_server' EXIT
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$second_port/ready" >/dev/null && break; sleep 0.2; done
python3 bench/live.py "$bench_url" "http://127.0.0.1:$second_port" "$api_token" "$web_token" "$bench_server_pid" \
    "$STADIUMCLOUD_DATABASE_URL"
