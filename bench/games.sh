#!/usr/bin/env bash
# Canonical games benchmark (bench/README.md, "Games"): release server and a throwaway PostgreSQL on loopback;
# the benchmark imports Resources/canonical (every season), then measures a first sync, a daily update, and
# games-by-date and match at 32 connections.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/postgres.sh
source scripts/lib/bench-server.sh
ensure_packages

swift build -c release --product stadiumcloud
swift build -c release --product stadiumcloud-bench
bin="$(swift build -c release --show-bin-path)"

bench_start_server "$bin/stadiumcloud"
"$bin/stadiumcloud" schema apply Resources/schema.json >/dev/null

BENCH_SUITE=games BENCH_SERVER="$bench_url" BENCH_DATABASE_URL="$STADIUMCLOUD_DATABASE_URL" BENCH_API_TOKEN="$api_token" \
BENCH_WEB_AUTH_TOKEN="$web_token" BENCH_USER_RECORD_NAME="$user_record_name" BENCH_DATASET=Resources/canonical \
    "$bin/stadiumcloud-bench"
