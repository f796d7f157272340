# Shared by scripts/run and scripts/test: install PostgreSQL 15 when missing and run a throwaway cluster on a
# loopback port. Source it, then call pg_start DATA_DIR PORT and pg_stop DATA_DIR.

pg_bin_dir() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

# Installs what the project needs from apt when it is missing (a fresh machine has nothing installed by hand).
ensure_packages() {
    local missing=()
    [ -n "$(pg_bin_dir)" ] || missing+=(postgresql)
    command -v psql >/dev/null 2>&1 || missing+=(postgresql-client)
    command -v curl >/dev/null 2>&1 || missing+=(curl)  # the asset tests upload with real curl
    command -v openssl >/dev/null 2>&1 || missing+=(openssl)  # scripts/run makes a development server key
    # The client SDK: URLSession on Linux is FoundationNetworking over libcurl; its local store is SQLite (GRDB).
    dpkg -s libcurl4-openssl-dev >/dev/null 2>&1 || missing+=(libcurl4-openssl-dev)
    dpkg -s libsqlite3-dev >/dev/null 2>&1 || missing+=(libsqlite3-dev)
    dpkg -s zlib1g-dev >/dev/null 2>&1 || missing+=(zlib1g-dev)  # gzip answers (Sources/CZlib)
    command -v nginx >/dev/null 2>&1 || missing+=(nginx-light)  # the load balancer of the cluster fault scenario
    if [ ${#missing[@]} -gt 0 ]; then
        echo "Installing ${missing[*]} from apt…" >&2
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
    fi
    command -v swift >/dev/null 2>&1 || { echo "swift is not on PATH: install Swift 6 (https://swift.org/install)" >&2; exit 1; }
}

# schemathesis (which brings PyYAML) for scripts/check-openapi.py and the fuzz run, from PyPI when missing.
ensure_python_packages() {
    python3 -c 'import schemathesis, yaml' 2>/dev/null \
        || python3 -m pip install --quiet --disable-pip-version-check "schemathesis==4.32.5" >&2
}

# Runs a PostgreSQL binary as the user that owns the cluster (initdb refuses to run as root).
pg_as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# pg_start DATA_DIR PORT: creates the cluster when DATA_DIR is empty, then starts it on 127.0.0.1:PORT.
# Throwaway settings (no fsync) unless PG_DURABLE=1, which keeps PostgreSQL's defaults: the fault scenarios
# crash it and count on acknowledged commits surviving. PG_OPTIONS adds server options (a benchmark's profile:
# "-c shared_preload_libraries=pg_stat_statements").
pg_start() {
    local data="$1" port="$2" bin
    bin="$(pg_bin_dir)"
    mkdir -p "$data"
    if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$data"; chmod 700 "$data"; fi
    if [ ! -f "$data/PG_VERSION" ]; then
        pg_as_owner "$bin/initdb" -D "$data" -U postgres -A trust -N --no-locale -E UTF8 >/dev/null
    fi
    # Loopback only, socket inside the data folder.
    local durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    [ "${PG_DURABLE:-0}" = 1 ] && durability=""
    pg_as_owner "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 30 start -o \
        "-p $port -c listen_addresses=127.0.0.1 -k $data $durability -c max_connections=200 ${PG_OPTIONS:-}" >/dev/null \
        || { cat "$data/server.log" >&2; return 1; }
}

pg_stop() {
    local data="$1"
    [ -f "$data/postmaster.pid" ] && pg_as_owner "$(pg_bin_dir)/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
}

# A free TCP port on 127.0.0.1 from PREFERRED upwards: nobody listens on it and no socket uses it, not even one
# in TIME-WAIT (an outgoing connection's port in TIME-WAIT makes PostgreSQL's bind fail with "Address already in
# use"). Callers prefer ports below Linux's ephemeral range (32768–60999), which outgoing connections draw from.
free_port() {
    local port="$1"
    while (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null \
        || awk -v p="$(printf ':%04X' "$port")" 'NR > 1 && substr($2, length($2) - 4) == p {found = 1} END {exit !found}' \
            /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
        port=$((port + 1))
    done
    echo "$port"
}
