#!/usr/bin/env bash
# Score feeds (bench/README.md, "Feeds"): a release server with the canonical data polls a replay of the four score
# providers (bench/feeds.py replay: their real answer shapes, the dataset's games of today's US Eastern day in
# progress, earlier days final) on loopback. Measures: the first round of a day of seven leagues (time, database
# work, games changed); fetch-to-wake, from the provider's answer carrying a new score to a device's changes/wait
# on the season zone answering; and visit saves' p99 while scores change every 2 s against while nothing changes.
# BENCH_ROUNDS (50) fetch-to-wake rounds, BENCH_SAVES (2000) saves per condition, BENCH_CLIENTS (6) accounts
# saving, BENCH_SAVE_RATE (50) saves/s in all. Last, what each kind of feed write costs the catalog's next reader
# (stadiumcloud-bench's catalog suite, in memory: a score, a moved start, a new provider id, a new game). BENCH_BIN
# runs a stadiumcloud binary already built (and the stadiumcloud-bench beside it) instead of building the release ones.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/postgres.sh
source scripts/lib/bench-server.sh
ensure_packages
bin="$(bench_binary)"
container=iCloud.com.sportstime.bench
clients="${BENCH_CLIENTS:-6}"

# The replay first, so no server ever asks a provider that is not there. It exits by itself once this script is
# gone (it watches its parent), so an early failure below leaves nothing running.
feeds_work="$(mktemp -d /tmp/stadiumcloud-feeds.XXXXXX)"
replay_port="$(free_port 18680)"
replay_url="http://127.0.0.1:$replay_port"
python3 bench/feeds.py replay --port "$replay_port" --canonical Resources/canonical --max-seconds 3600 \
    >"$feeds_work/replay.log" 2>&1 &
replay_pid=$!
for _ in $(seq 1 100); do curl -sf "$replay_url/_bench/stats" >/dev/null && break; sleep 0.1; done
curl -sf "$replay_url/_bench/stats" >/dev/null || { cat "$feeds_work/replay.log" >&2; exit 1; }
head -n 1 "$feeds_work/replay.log"

# The database, the tokens and a server to set them up with; the schema (development, deployed to production as
# the feeds' targets need) and the canonical data; one account per saving client.
bench_start_server "$bin"
stop_everything() {
    kill "$replay_pid" 2>/dev/null || true
    # The server stopped here, so that bench_stop_server (whose `kill` of a server already gone would end the trap
    # under set -e, before PostgreSQL is stopped) only stops PostgreSQL.
    stop_server
    bench_server_pid=""
    bench_stop_server
    rm -rf "$feeds_work"
}
trap stop_everything EXIT
"$bin" schema apply Resources/schema.json --container "$container" >/dev/null
"$bin" schema deploy --container "$container" >/dev/null
"$bin" import Resources/canonical --container "$container" | tail -n 1
for i in $(seq 1 "$clients"); do
    "$bin" accounts create "feeds$i" 2>/dev/null | sed -n 's/^ckWebAuthToken: //p' >>"$feeds_work/accounts"
done
http_port="${bench_url##*:}"

# The feeds are turned on by starting a server with --feeds once the data is in: a poller started before the
# import would spend its first round on an empty catalog, and its schedule polls would not be due again for a day.
stop_server() {
    [ -n "$bench_server_pid" ] || return 0
    kill "$bench_server_pid" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$bench_server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$bench_server_pid" 2>/dev/null || true
    wait "$bench_server_pid" 2>/dev/null || true
}
feeds=(--feeds --feed-environment development --feed-live-interval-seconds 2
    --feed-url "espn=$replay_url/espn" --feed-url "mlb-stats=$replay_url/mlb"
    --feed-url "nhl-web=$replay_url/nhl" --feed-url "nba-cdn=$replay_url/nba")
start_server() {  # [serve arguments…]: the server of bench_start_server again, on the same port
    LOG_LEVEL=notice "$bin" serve --port "$http_port" --assets "$bench_work/assets" --container "$container" \
        --account-rate-limit 1000000 --token-rate-limit 1000000 "$@" >>"$feeds_work/server.log" 2>&1 &
    bench_server_pid=$!
    for _ in $(seq 1 300); do
        curl -sf "$bench_url/health" >/dev/null && return 0
        kill -0 "$bench_server_pid" 2>/dev/null || { tail -n 30 "$feeds_work/server.log" >&2; exit 1; }
        sleep 0.1
    done
    echo "the server did not answer on $bench_url" >&2
    exit 1
}
# Counters of the bench database, once no other session is open: a backend reports its counters when it exits.
probes=0
pg_quiet() {
    for _ in $(seq 1 100); do
        probes=$((probes + 1))
        [ "$(psql "$STADIUMCLOUD_DATABASE_URL" -Atc \
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")" = 0 ] && return 0
        sleep 0.1
    done
}
pg_counters() {
    psql "$STADIUMCLOUD_DATABASE_URL" -Atc "SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted
        FROM pg_stat_database WHERE datname = current_database()" | tr '|' ' '
}

# 0. What a server costs the database without feeds, started, asked for the canonical catalog (which the poller
#    builds before its first poll) and stopped: the base of the ingest's figures below.
stop_server
pg_quiet
probes=0
base_before="$(pg_counters)"
start_server
for _ in $(seq 1 10); do  # a 503 while the catalog is built (as a device would, retry)
    status="$(curl -s --max-time 120 -o "$feeds_work/base.json" -w '%{http_code}' -H 'Content-Type: application/json' \
        -X POST "$bench_url/database/1/$container/development/public/canonical/games?ckAPIToken=$api_token" \
        -d '{"date": "2026-01-01"}')"
    [ "$status" = 503 ] || break
    sleep 2
done
[ "$status" = 200 ] || { echo "canonical/games answered $status: $(head -c 300 "$feeds_work/base.json")" >&2; exit 1; }
stop_server
pg_quiet
base_after="$(pg_counters)"
base_probes=$((probes + 1))

# 1. Ingest: a server with --feeds from its start until its first round is applied, then stopped so that every
#    transaction it made is counted (pg_stat_database, read after its sessions have closed).
probes=0
pg_before="$(pg_counters)"
curl -sf -X POST "$replay_url/_bench/mark" >/dev/null
start_server "${feeds[@]}"
timeout 300 python3 bench/feeds.py round --replay "$replay_url" --server "$bench_url" --server-pid "$bench_server_pid" \
    --out "$feeds_work/ingest.json"
stop_server
pg_quiet
pg_after="$(pg_counters)"

# 2. A server with --feeds again (its first round finds nothing new), then fetch-to-wake and the visit saves.
curl -sf -X POST "$replay_url/_bench/mark" >/dev/null
start_server "${feeds[@]}"
timeout 1800 python3 bench/feeds.py measure --replay "$replay_url" --server "$bench_url" --api "$api_token" \
    --accounts "$feeds_work/accounts" --server-pid "$bench_server_pid" --ingest "$feeds_work/ingest.json" \
    --pg-before "$pg_before" --pg-after "$pg_after" --pg-probes "$((probes + 1))" \
    --base-before "$base_before" --base-after "$base_after" --base-probes "$base_probes" --live-interval 2

# What the server logged about the feeds (both runs with --feeds).
echo
echo "Server log: $(grep -c "a provider's game was left as it was" "$feeds_work/server.log" || true) games left as they were," \
    "$(grep -c "a score provider failed" "$feeds_work/server.log" || true) provider failures," \
    "$(grep -c "could not be written" "$feeds_work/server.log" || true) failed writes," \
    "$(grep -c -E " (error|critical) " "$feeds_work/server.log" || true) errors"
grep -E "left as it was|score provider|could not be written| error | critical " "$feeds_work/server.log" | head -n 8 || true

# What each kind of feed write costs the next reader of the catalog (no server, no database).
echo
if [ -n "${BENCH_BIN:-}" ]; then
    catalog_bench="$(dirname "$BENCH_BIN")/stadiumcloud-bench"
else
    swift build -c release --product stadiumcloud-bench >&2
    catalog_bench="$(swift build -c release --show-bin-path)/stadiumcloud-bench"
fi
BENCH_SUITE=catalog BENCH_DATASET=Resources/canonical BENCH_ROUNDS="${BENCH_CATALOG_ROUNDS:-300}" "$catalog_bench"
