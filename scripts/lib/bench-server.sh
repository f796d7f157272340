# Shared by the benchmarks: a throwaway PostgreSQL and a release server on free loopback ports, with an API
# token and an account. Source after postgres.sh; call bench_start_server BIN [serve arguments…]. Sets
# bench_work (a scratch folder), bench_url (http://127.0.0.1:PORT), api_token, web_token, user_record_name,
# STADIUMCLOUD_DATABASE_URL; everything stops and is removed on exit.

bench_start_server() {
    local bin="$1"
    shift
    bench_work="$(mktemp -d /tmp/stadiumcloud-bench.XXXXXX)"
    chmod 755 "$bench_work"  # the postgres user must reach the cluster folder inside
    local port http_port
    port="$(free_port 26432)"
    http_port="$(free_port 18080)"
    bench_server_pid=""
    trap 'bench_stop_server' EXIT
    pg_start "$bench_work/pg" "$port"
    psql -h 127.0.0.1 -p "$port" -U postgres -qc "CREATE DATABASE bench"
    export STADIUMCLOUD_DATABASE_URL="postgres://postgres@127.0.0.1:$port/bench"
    "$bin" migrate up >/dev/null 2>&1
    api_token="$("$bin" tokens create --label bench 2>/dev/null)"
    local account
    account="$("$bin" accounts create bench 2>/dev/null)"
    web_token="$(echo "$account" | sed -n 's/^ckWebAuthToken: //p')"
    user_record_name="$(echo "$account" | sed -n 's/^userRecordName: //p')"
    # The benchmarks' own container, and no per-account rate limit in the way of the load they make.
    LOG_LEVEL=warning "$bin" serve --port "$http_port" --assets "$bench_work/assets" \
        --container iCloud.com.sportstime.bench --account-rate-limit 1000000 --token-rate-limit 1000000 "$@" &
    bench_server_pid=$!
    bench_url="http://127.0.0.1:$http_port"
    for _ in $(seq 1 50); do curl -sf "$bench_url/health" >/dev/null && break; sleep 0.2; done
}

bench_stop_server() {
    [ -n "${bench_server_pid:-}" ] && kill "$bench_server_pid" 2>/dev/null
    wait 2>/dev/null
    pg_stop "$bench_work/pg"
    rm -rf "$bench_work"
}

# The floor (bench/Floor, BIN): the same HTTP stack and pool answering `POST /floor` with one `SELECT 1`, what no
# request of the server can go below. Sets floor_url and floor_pid, writes wrk's script for it to
# $bench_work/floor.lua, and stops it on exit with the server.
bench_start_floor() {
    local port
    port="$(free_port 18480)"
    BENCH_DATABASE_URL="$STADIUMCLOUD_DATABASE_URL" BENCH_FLOOR_PORT="$port" "$1" &
    floor_pid=$!
    trap 'kill $floor_pid 2>/dev/null; bench_stop_server' EXIT
    floor_url="http://127.0.0.1:$port/floor"
    for _ in $(seq 1 50); do curl -sf -X POST "$floor_url" >/dev/null && break; sleep 0.1; done
    printf 'wrk.method = "POST"\n' >"$bench_work/floor.lua"
}

# wrk, the load generator of bench/cluster.sh and bench/hotpath.sh, from Debian's packages when missing.
ensure_wrk() {
    command -v wrk >/dev/null 2>&1 && return
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq wrk >&2
}

# The stadiumcloud binary a benchmark runs: BENCH_BIN when set, else the release build, built now.
bench_binary() {
    if [ -n "${BENCH_BIN:-}" ]; then
        echo "$BENCH_BIN"
        return
    fi
    swift build -c release --product stadiumcloud >&2
    echo "$(swift build -c release --show-bin-path)/stadiumcloud"
}
