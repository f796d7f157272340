#!/usr/bin/env bash
# The hot path: wrk at 32 connections for BENCH_SECONDS (default 10) against the floor (the same HTTP
# stack and pool answering one `SELECT 1`: bench/Floor), `GET /health`, and the public and private empty polls
# (`changes/zone` with the current token; the private one also over 48 accounts in turn, since concurrent polls
# share the read of their zones' heads), in BENCH_ROUNDS (default 3) interleaved rounds; then, one client at a
# time, a single-record save against a raw single-row upsert, and what each request costs PostgreSQL
# (stadiumcloud-bench, BENCH_SUITE=hotpath).
# PostgreSQL runs durable (fsync and synchronous commit on, PG_DURABLE=1), so a commit costs its real WAL flush.
# Last, the floor, a save and a raw upsert once more at one client with C clients (wrk -c 1, pgbench -c 1).
# BENCH_PROFILE=1 also records each path with perf under wrk and writes flame graphs to docs/flamegraphs/.
set -euo pipefail
export PG_DURABLE="${PG_DURABLE:-1}"
cd "$(dirname "$0")/.."
source scripts/lib/postgres.sh
source scripts/lib/bench-server.sh
ensure_packages
ensure_wrk
for product in stadiumcloud stadiumcloud-floor stadiumcloud-bench; do swift build -c release --product "$product"; done
bin="$(swift build -c release --show-bin-path)"
bench_start_server "$bin/stadiumcloud"
seconds="${BENCH_SECONDS:-10}"
bench_start_floor "$bin/stadiumcloud-floor"

path="/database/1/iCloud.com.sportstime.bench/development"
current_token() {  # current_token SCOPE QUERY
    curl -sf "$bench_url$path/$1/zones/list?$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["zones"][0]["syncToken"])'
}
json_script() {  # json_script FILE BODY: a wrk script that POSTs BODY as JSON
    printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = %s\n' "'$2'" >"$1"
}
poll_body() {  # poll_body TOKEN: changes/zone of the default zone from TOKEN
    printf '{"zones":[{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"%s"}]}' "$1"
}
poll_script() {  # poll_script FILE TOKEN
    json_script "$1" "$(poll_body "$2")"
}
save_script() {  # save_script FILE RECORD_NAME: a single-record forceReplace
    json_script "$1" "{\"operations\":[{\"operationType\":\"forceReplace\",\"record\":{\"recordName\":\"$2\",\"recordType\":\"Visit\",\"fields\":{\"n\":{\"value\":1}}}}]}"
}
poll_script "$bench_work/public.lua" "$(current_token public "ckAPIToken=$api_token")"
# The private poll reuses one web auth token: each answer still rotates it (a token row per answer); parallel
# requests with one token are allowed within the 120 s grace period (docs/AUTH.md).
private_query="ckAPIToken=$api_token&ckWebAuthToken=$web_token"
poll_script "$bench_work/private.lua" "$(current_token private "$private_query")"
# Polls of one zone share the read of its head (CoalescedReads), and the two polls above each ask of one zone. Real
# private polls are spread over many accounts, so the same poll also runs over 48 accounts, each wrk thread taking
# them in turn from its own starting point: seldom two of one account at once. A wrk script that builds each request
# costs wrk more CPU than a fixed request does, so the same script over one account is measured beside it.
accounts=48
polls=()
for i in $(seq 1 "$accounts"); do
    token="$("$bin/stadiumcloud" accounts create "poller$i" 2>/dev/null | sed -n 's/^ckWebAuthToken: //p')"
    query="ckAPIToken=$api_token&ckWebAuthToken=$token"
    polls+=("{\"$path/private/changes/zone?$query\", [[$(poll_body "$(current_token private "$query")")]]},")
done
polls_script() {  # polls_script FILE ENTRY...: a wrk script that takes the polls in turn
    {
        echo 'local polls = {'
        printf '  %s\n' "${@:2}"
        echo '}'
        echo 'local next = 0'
        echo 'local headers = {["Content-Type"] = "application/json"}'
        echo 'local threads = 0'
        echo 'function setup(thread) threads = threads + 1; thread:set("first", threads * 17) end'
        echo 'function init(args) next = first % #polls end'
        echo 'function request() next = next % #polls + 1; return wrk.format("POST", polls[next][1], headers, polls[next][2]) end'
    } >"$1"
}
polls_script "$bench_work/accounts.lua" "${polls[@]}"
polls_script "$bench_work/account.lua" "${polls[0]}"

# One wrk run at 32 connections: "REQ/S P50 P99 NON2XX".
measure() {  # measure SCRIPT URL
    local out
    out="$(wrk -t 2 -c 32 -d "${seconds}s" --latency -s "$1" "$2")"
    echo "$(echo "$out" | awk '/Requests\/sec/ {printf "%.0f", $2}')" "$(echo "$out" | awk '$1 == "50%" {print $2}')" \
        "$(echo "$out" | awk '$1 == "99%" {print $2}')" "$(echo "$out" | awk '/Non-2xx/ {print $NF}' | grep . || echo 0)"
}
# The machine drifts by a quarter between runs (bench/README.md), so the floor and the paths take turns, round after
# round, each path set against the floor of its own round; the goals are judged on the median round.
rounds="${BENCH_ROUNDS:-3}"
names=("floor: POST /floor (SELECT 1)" "GET /health (no database)" "public empty poll" "private empty poll (token rotation on)"
    "private empty poll, 1 account, by script" "private empty poll, $accounts accounts, by script")
scripts=("$bench_work/floor.lua" /dev/null "$bench_work/public.lua" "$bench_work/private.lua" "$bench_work/account.lua"
    "$bench_work/accounts.lua")
urls=("$floor_url" "$bench_url/health" "$bench_url$path/public/changes/zone?ckAPIToken=$api_token"
    "$bench_url$path/private/changes/zone?$private_query" "$bench_url" "$bench_url")
echo "wrk -c 32, ${seconds} s a row, $rounds rounds"
shares_public=() shares_private=() shares_account=() shares_accounts=()
for round in $(seq 1 "$rounds"); do
    floor_rate=""
    for i in 0 1 2 3 4 5; do
        read -r rate p50 p99 errors <<<"$(measure "${scripts[$i]}" "${urls[$i]}")"
        [ -n "$floor_rate" ] || floor_rate="$rate"
        share="$(awk -v r="$rate" -v f="$floor_rate" 'BEGIN {printf "%.0f", 100 * r / f}')"
        [ "$i" = 2 ] && shares_public+=("$share")
        [ "$i" = 3 ] && shares_private+=("$share")
        [ "$i" = 4 ] && shares_account+=("$share")
        [ "$i" = 5 ] && shares_accounts+=("$share")
        printf "round %s  %-44s %8s req/s %5s %% of floor   p50 %9s   p99 %9s   non-2xx %s\n" "$round" "${names[$i]}" "$rate" "$share" "$p50" "$p99" "$errors"
    done
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "median share of the floor: public $(median "${shares_public[@]}") % (goal 60 %), private $(median "${shares_private[@]}") % (goal 50 %)," \
    "by script: private over 1 account $(median "${shares_account[@]}") %, over $accounts accounts $(median "${shares_accounts[@]}") %"
# Resident memory after the rounds: PostgresNIO's pool once piled up a timer per lease here (OpenConnections).
echo "resident after the rounds: server $(($(ps -o rss= -p "$bench_server_pid") / 1024)) MiB, floor $(($(ps -o rss= -p "$floor_pid") / 1024)) MiB"
echo

# profile NAME SCRIPT URL CONNECTIONS: perf for 5 s on the server under wrk, as docs/flamegraphs/NAME.svg.
profile() {
    wrk -t 2 -c "$4" -d 8s -s "$2" "$3" >/dev/null &
    local load=$!
    sleep 1
    perf record -F 1999 -g -p "$bench_server_pid" -o "$bench_work/perf.data" -- sleep 5 >/dev/null 2>&1
    wait "$load"
    mkdir -p docs/flamegraphs
    perf script -i "$bench_work/perf.data" 2>/dev/null | swift demangle --simplified \
        | python3 scripts/flamegraph.py "$1 (bench/hotpath.sh, release, wrk -c $4)" >"docs/flamegraphs/$1.svg"
    echo "flame graph: docs/flamegraphs/$1.svg"
}
if [ "${BENCH_PROFILE:-0}" = 1 ]; then
    command -v perf >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >&2
    save_script "$bench_work/save.lua" profiled
    profile public-empty-poll "$bench_work/public.lua" "$bench_url$path/public/changes/zone?ckAPIToken=$api_token" 32
    profile private-empty-poll "$bench_work/private.lua" "$bench_url$path/private/changes/zone?$private_query" 32
    profile private-empty-poll-accounts "$bench_work/accounts.lua" "$bench_url" 32
    profile save "$bench_work/save.lua" "$bench_url$path/private/records/modify?$private_query" 4
    echo
fi

BENCH_SUITE=hotpath BENCH_SERVER="$bench_url" BENCH_FLOOR_URL="$floor_url" BENCH_DATABASE_URL="$STADIUMCLOUD_DATABASE_URL" BENCH_API_TOKEN="$api_token" \
BENCH_WEB_AUTH_TOKEN="$web_token" BENCH_USER_RECORD_NAME="$user_record_name" "$bin/stadiumcloud-bench"

echo
# The same at one client with C clients that add next to nothing, after the counters above (their own activity would
# show in them): wrk -c 1 for the floor and a save (a new account's web auth token, reused within its grace period),
# pgbench -c 1 for a raw single-row upsert with its own commit.
lean_token="$("$bin/stadiumcloud" accounts create lean 2>/dev/null | sed -n 's/^ckWebAuthToken: //p')"
save_script "$bench_work/save1.lua" lean
psql -q "$STADIUMCLOUD_DATABASE_URL" -c "CREATE TABLE lean_raw (id int PRIMARY KEY, n int, notes text)"
echo "INSERT INTO lean_raw VALUES (1, 1, 'A visit to the ballpark with friends') ON CONFLICT (id) DO UPDATE SET n = lean_raw.n + 1;" \
    >"$bench_work/raw.sql"
p50_ms() { wrk -t 1 -c 1 -d 5s --latency -s "$1" "$2" | awk '$1 == "50%" {v = $2; if (v ~ /us$/) v = v / 1000; else v = v + 0; printf "%.2f", v}'; }
lean_floor="$(p50_ms "$bench_work/floor.lua" "$floor_url")"
lean_save="$(p50_ms "$bench_work/save1.lua" "$bench_url$path/private/records/modify?ckAPIToken=$api_token&ckWebAuthToken=$lean_token")"
lean_raw="$(pgbench -n -M prepared -c 1 -T 5 -f "$bench_work/raw.sql" "$STADIUMCLOUD_DATABASE_URL" 2>/dev/null \
    | awk '/latency average/ {printf "%.2f", $4}')"
echo "one client, C clients (wrk -c 1 p50, pgbench -c 1 mean): floor request $lean_floor ms, save $lean_save ms, raw upsert $lean_raw ms;" \
    "save / (floor + raw) $(awk -v s="$lean_save" -v f="$lean_floor" -v r="$lean_raw" 'BEGIN {printf "%.2f", s / (f + r)}')×"
