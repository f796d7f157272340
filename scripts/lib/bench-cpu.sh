# Shared by bench/writes.sh and bench/pages.sh: CPU per request of the server and of PostgreSQL, from /proc. Source
# before bench_start_server. `row NAME CONNECTIONS COMMAND…` runs wrk or pgbench and prints req/s, p50 and each
# side's CPU µs per request (also left in row_server_us and row_pg_us), and its share of the floor's req/s once
# floor_row has run. BENCH_STATEMENTS=1 loads pg_stat_statements into PostgreSQL (statements_ready creates it once the
# database is there) and prints after each row the statements that cost PostgreSQL most (as many plans as calls: a
# prepared statement planned anew for every execution).
[ -z "${BENCH_STATEMENTS:-}" ] || export PG_OPTIONS="${PG_OPTIONS:-} -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all -c pg_stat_statements.track_planning=on"
statements_ready() { [ -z "${BENCH_STATEMENTS:-}" ] || psql -q "$STADIUMCLOUD_DATABASE_URL" -c "CREATE EXTENSION pg_stat_statements"; }

# The app's container served on a durable PostgreSQL (PG_DURABLE=1 unless set) with its schema deployed: what
# bench/writes.sh and bench/pages.sh measure, and the floor beside it (bench_start_floor; with BENCH_BIN, the floor
# built beside it). Sets bin and seconds (BENCH_SECONDS, default 10) besides bench_start_server's variables.
bench_start_app() {
    export PG_DURABLE="${PG_DURABLE:-1}"
    ensure_packages
    ensure_wrk
    bin="$(bench_binary)"
    bench_start_server "$bin" --container iCloud.com.sportstime.app
    seconds="${BENCH_SECONDS:-10}"
    "$bin" schema apply Resources/schema.json >/dev/null
    "$bin" schema deploy >/dev/null
    statements_ready
    [ -n "${BENCH_BIN:-}" ] || swift build -c release --product stadiumcloud-floor >&2
    bench_start_floor "$(dirname "$bin")/stadiumcloud-floor"
}

# floor_row CONNECTIONS: the floor at that many connections; the rows after it print their share of its req/s.
# Leaves floor_rate and floor_server_us.
floor_row() {
    floor_rate=""
    row_pid="$floor_pid" wrk_row "floor: POST /floor, one SELECT 1 (same stack)" "$1" "$bench_work/floor.lua" "$floor_url"
    floor_rate="$row_rate"
    floor_server_us="$row_server_us"
}

tick_us=$((1000000 / $(getconf CLK_TCK)))

# CPU in clock ticks of these processes and of their children that ended (/proc/PID/stat fields 14-17).
cpu_ticks() { for pid in "$@"; do awk '{print $14 + $15 + $16 + $17}' "/proc/$pid/stat" 2>/dev/null || true; done | awk '{s += $1} END {print s + 0}'; }
pg_ticks() {
    local postmaster
    postmaster="$(head -1 "$bench_work/pg/postmaster.pid")"
    # shellcheck disable=SC2046
    cpu_ticks "$postmaster" $(pgrep -P "$postmaster")
}
# row NAME CONNECTIONS COMMAND...: runs COMMAND (wrk or pgbench), prints req/s, p50, CPU µs per request (the server's,
# or row_pid's when set).
row() {
    local name="$1" connections="$2"
    shift 2
    local server0 pg0 out server1 pg1 requests rate p50 errors
    [ -z "${BENCH_STATEMENTS:-}" ] || psql -qAt "$STADIUMCLOUD_DATABASE_URL" -c "SELECT pg_stat_statements_reset()" >/dev/null
    local pid="${row_pid:-$bench_server_pid}"
    server0="$(cpu_ticks "$pid")"
    pg0="$(pg_ticks)"
    out="$("$@" 2>&1)"
    server1="$(cpu_ticks "$pid")"
    pg1="$(pg_ticks)"
    if [ "$1" = pgbench ]; then
        requests="$(echo "$out" | awk '/actually processed/ {print $NF}' | cut -d/ -f1)"
        rate="$(echo "$out" | awk '/^tps/ {printf "%.0f", $3}')"
        p50="$(echo "$out" | awk '/latency average/ {print $4 "ms"}')"
        errors=0
        server1="$server0"
    else
        requests="$(echo "$out" | awk '/requests in/ {print $1}')"
        rate="$(echo "$out" | awk '/Requests\/sec/ {printf "%.0f", $2}')"
        p50="$(echo "$out" | awk '$1 == "50%" {print $2}')"
        errors="$(echo "$out" | awk '/Non-2xx/ {print $NF}' | grep . || echo 0)"
    fi
    row_rate="$rate"
    row_server_us=$(((server1 - server0) * tick_us / requests))
    row_pg_us=$(((pg1 - pg0) * tick_us / requests))
    printf "%-46s c%-3s %7s req/s  p50 %9s  server %6s µs/req  PostgreSQL %6s µs/req  non-2xx %s\n" "$name" "$connections" "$rate" "$p50" \
        "$row_server_us" "$row_pg_us" "$errors"
    [ -z "${floor_rate:-}" ] || printf "    %s %% of the floor's req/s\n" "$(awk -v r="$rate" -v f="$floor_rate" 'BEGIN {printf "%.0f", 100 * r / f}')"
    [ -z "${BENCH_STATEMENTS:-}" ] || psql -qAt -F ' | ' "$STADIUMCLOUD_DATABASE_URL" -c "
        SELECT round(((total_plan_time + total_exec_time) * 1000 / $requests)::numeric) || ' µs/req', calls || ' calls', plans || ' plans',
            left(regexp_replace(query, '\s+', ' ', 'g'), 120)
        FROM pg_stat_statements ORDER BY total_plan_time + total_exec_time DESC LIMIT 6" | sed 's/^/    /'
}
wrk_row() { row "$1" "$2" wrk -t "$(($2 > 1 ? 2 : 1))" -c "$2" -d "${seconds}s" --latency -s "$3" "$4"; }
