#!/usr/bin/env bash
# Benchmark: builds release binaries, starts a throwaway PostgreSQL and the server on loopback, runs
# stadiumcloud-bench against both, prints the table. BENCH_BIG_RECORDS (default 1000000) sizes the large zone.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/postgres.sh
ensure_packages

swift build -c release --product stadiumcloud
swift build -c release --product stadiumcloud-bench
bin="$(swift build -c release --show-bin-path)"

data="$(mktemp -d /tmp/stadiumcloud-bench-pg.XXXXXX)"
port="$(free_port 56432)"
http_port="$(free_port 18080)"
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; pg_stop "$data"; rm -rf "$data"; }
trap cleanup EXIT
pg_start "$data" "$port"
psql -h 127.0.0.1 -p "$port" -U postgres -qc "CREATE DATABASE bench"
export STADIUMCLOUD_DATABASE_URL="postgres://postgres@127.0.0.1:$port/bench"

"$bin/stadiumcloud" migrate up >/dev/null
api_token="$("$bin/stadiumcloud" tokens create --label bench)"
account="$("$bin/stadiumcloud" accounts create bench)"
LOG_LEVEL=warning "$bin/stadiumcloud" serve --port "$http_port" &
server_pid=$!
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$http_port/health" >/dev/null && break; sleep 0.2; done

BENCH_SERVER="http://127.0.0.1:$http_port" BENCH_DATABASE_URL="$STADIUMCLOUD_DATABASE_URL" BENCH_API_TOKEN="$api_token" \
BENCH_WEB_AUTH_TOKEN="$(echo "$account" | sed -n 's/^ckWebAuthToken: //p')" \
BENCH_USER_RECORD_NAME="$(echo "$account" | sed -n 's/^userRecordName: //p')" \
    "$bin/stadiumcloud-bench"
