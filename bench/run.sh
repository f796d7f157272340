#!/usr/bin/env bash
# Benchmark: builds release binaries, starts a throwaway PostgreSQL and the server on loopback, runs
# stadiumcloud-bench against both, prints the table. BENCH_BIG_RECORDS (default 1000000) sizes the large zone.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/postgres.sh
source scripts/lib/bench-server.sh
ensure_packages

swift build -c release --product stadiumcloud
swift build -c release --product stadiumcloud-bench
bin="$(swift build -c release --show-bin-path)"

bench_start_server "$bin/stadiumcloud"

BENCH_SERVER="$bench_url" BENCH_DATABASE_URL="$STADIUMCLOUD_DATABASE_URL" BENCH_API_TOKEN="$api_token" \
BENCH_WEB_AUTH_TOKEN="$web_token" BENCH_USER_RECORD_NAME="$user_record_name" \
    "$bin/stadiumcloud-bench"
