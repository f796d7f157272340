# Shared by scripts/fuzz/run, scripts/client/smoke and scripts/console/run: a fresh database on the test PostgreSQL
# (STADIUMCLOUD_TEST_DATABASE_URL, or a throwaway cluster started here) and a server on a free loopback port.
# Source after postgres.sh. Commands added to `cleanup` run on exit, last added first.

cleanup=()
trap 'for ((i = ${#cleanup[@]} - 1; i >= 0; i--)); do eval "${cleanup[i]}"; done' EXIT

# live_database NAME: creates database NAME afresh and exports STADIUMCLOUD_DATABASE_URL for it.
live_database() {
    if [ -z "${STADIUMCLOUD_TEST_DATABASE_URL:-}" ]; then
        ensure_packages
        local data pg_port
        data="$(mktemp -d /tmp/stadiumcloud-live-pg.XXXXXX)"
        pg_port="$(free_port 26432)"
        pg_start "$data" "$pg_port"
        cleanup+=("pg_stop '$data'; rm -rf '$data'")
        STADIUMCLOUD_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$pg_port/postgres"
    fi
    PGOPTIONS="-c client_min_messages=warning" psql "$STADIUMCLOUD_TEST_DATABASE_URL" -qc "DROP DATABASE IF EXISTS $1" -qc "CREATE DATABASE $1"
    export STADIUMCLOUD_DATABASE_URL="${STADIUMCLOUD_TEST_DATABASE_URL%/*}/$1"
}

# live_canonical_database NAME BIN: like live_database, with the migrations, Resources/schema.json and the canonical
# dataset already in it. The first caller imports them into a template database named after a hash of those files;
# later callers on the same PostgreSQL clone it (CREATE DATABASE … TEMPLATE), so the dataset is imported once per
# test run instead of once per live-server phase.
live_canonical_database() {
    local name="$1" bin="$2" template
    live_database "$name"
    template="stadiumcloud_canonical_$(cat migrations/*.sql Resources/schema.json $(find Resources/canonical -type f | sort) | sha256sum | cut -c1-12)"
    local admin="$STADIUMCLOUD_TEST_DATABASE_URL"
    if [ -z "$(psql "$admin" -Atqc "SELECT 1 FROM pg_database WHERE datname = '$template'")" ]; then
        psql "$admin" -qc "CREATE DATABASE ${template}_partial"
        STADIUMCLOUD_DATABASE_URL="${admin%/*}/${template}_partial" "$bin" migrate up >/dev/null
        STADIUMCLOUD_DATABASE_URL="${admin%/*}/${template}_partial" "$bin" schema apply Resources/schema.json >/dev/null
        STADIUMCLOUD_DATABASE_URL="${admin%/*}/${template}_partial" "$bin" import Resources/canonical | tail -n 1
        # Renamed only once whole, so an interrupted import is never cloned.
        psql "$admin" -qc "ALTER DATABASE ${template}_partial RENAME TO $template"
    fi
    PGOPTIONS="-c client_min_messages=warning" psql "$admin" -qc "DROP DATABASE IF EXISTS $name" -qc "CREATE DATABASE $name TEMPLATE $template"
}

# live_server BIN PORT LOG [serve arguments…]: starts `BIN serve` on 127.0.0.1:PORT, logging to LOG, and waits
# until /ready answers; sets live_server_pid. A server that dies on the way prints its log and fails the script.
live_server() {
    local bin="$1" port="$2" log="$3"
    shift 3
    "$bin" serve --port "$port" "$@" >"$log" 2>&1 &
    live_server_pid=$!
    cleanup+=("kill $live_server_pid 2>/dev/null || true; wait $live_server_pid 2>/dev/null || true")
    for _ in $(seq 1 120); do
        curl -fsS "http://127.0.0.1:$port/ready" >/dev/null 2>&1 && return 0
        kill -0 "$live_server_pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
        sleep 0.5
    done
    echo "the server did not become ready on port $port" >&2
    exit 1
}
