#!/usr/bin/env bash
# Several processes: the public empty poll (`changes/zone` with the current token, API token only) by wrk
# at 32 connections for 10 s, against one process directly (rate limits shared, then per process: what sharing
# costs), and through nginx to 1 and to 3 processes on one PostgreSQL. Release build; on this 2-core box the
# processes, nginx, PostgreSQL and wrk share two cores, so expect no gain from 3: the point is what nginx and
# sharing cost. BENCH_SECONDS (default 10) sets each row's length.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/postgres.sh
source scripts/lib/bench-server.sh
ensure_packages
ensure_wrk

swift build -c release --product stadiumcloud
bin="$(swift build -c release --show-bin-path)"
bench_start_server "$bin/stadiumcloud"
seconds="${BENCH_SECONDS:-10}"
extra_pids=()
nginx_dir=""
cleanup() {
    for pid in "${extra_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    [ -n "$nginx_dir" ] && [ -f "$nginx_dir/nginx.pid" ] && kill "$(cat "$nginx_dir/nginx.pid")" 2>/dev/null || true
    bench_stop_server
}
trap cleanup EXIT

# serve_more PORT [arguments…]: another process on the same database and assets.
serve_more() {
    local port="$1"
    shift
    LOG_LEVEL=warning "$bin/stadiumcloud" serve --port "$port" --assets "$bench_work/assets" \
        --container iCloud.com.sportstime.bench --account-rate-limit 1000000 --token-rate-limit 1000000 "$@" &
    extra_pids+=($!)
    for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && return; sleep 0.2; done
}

# balance PORT…: (re)starts nginx from deploy/nginx/stadiumcloud.conf over those ports; sets balancer_url.
balance() {
    [ -n "$nginx_dir" ] && [ -f "$nginx_dir/nginx.pid" ] && kill "$(cat "$nginx_dir/nginx.pid")" && sleep 0.5
    nginx_dir="$bench_work/nginx"
    mkdir -p "$nginx_dir/tmp"
    local listen upstreams=""
    listen="$(free_port 19080)"
    for port in "$@"; do upstreams+="server 127.0.0.1:$port;"; done
    sed -e "s/@LISTEN@/$listen/" -e "s/@UPSTREAMS@/$upstreams/" deploy/nginx/stadiumcloud.conf >"$nginx_dir/stadiumcloud.conf"
    nginx -p "$nginx_dir" -c stadiumcloud.conf -g "daemon on;" 2>>"$bench_work/nginx.log"
    balancer_url="http://127.0.0.1:$listen"
    for _ in $(seq 1 50); do curl -sf "$balancer_url/health" >/dev/null && return; sleep 0.1; done
}

path="/database/1/iCloud.com.sportstime.bench/development/public"
token="$(curl -sf "$bench_url$path/zones/list?ckAPIToken=$api_token" | python3 -c 'import json,sys; print(json.load(sys.stdin)["zones"][0]["syncToken"])')"
cat >"$bench_work/poll.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"zones":[{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"$token"}]}'
LUA

# row NAME URL: one wrk run; prints requests per second, p50 and p99.
row() {
    local out
    out="$(wrk -t 2 -c 32 -d "${seconds}s" --latency -s "$bench_work/poll.lua" "$2$path/changes/zone?ckAPIToken=$api_token")"
    printf "%-52s %8s req/s   p50 %8s   p99 %8s   non-2xx %s\n" "$1" \
        "$(echo "$out" | awk '/Requests\/sec/ {printf "%.0f", $2}')" \
        "$(echo "$out" | awk '$1 == "50%" {print $2}')" "$(echo "$out" | awk '$1 == "99%" {print $2}')" \
        "$(echo "$out" | awk '/Non-2xx/ {print $NF}' | grep . || echo 0)"
}

direct_port="${bench_url##*:}"
local_port="$(free_port 18180)"
serve_more "$local_port" --no-shared-rate-limits
echo "public empty poll, wrk -c 32, ${seconds} s a row"
row "1 process, direct, rate limits shared" "$bench_url"
row "1 process, direct, rate limits per process" "http://127.0.0.1:$local_port"
kill "${extra_pids[0]}"
balance "$direct_port"
row "nginx -> 1 process" "$balancer_url"
second="$(free_port 18280)"
serve_more "$second"
third="$(free_port 18380)"
serve_more "$third"
balance "$direct_port" "$second" "$third"
row "nginx -> 3 processes, one PostgreSQL" "$balancer_url"
