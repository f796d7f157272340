# shellcheck shell=bash
# Shared by the scripts in scripts/backup (docs/BACKUP.md): the database URL, PostgreSQL's programs, copying blobs
# and checking that every asset the database knows has its bytes. Source it; it defines functions only.

backup_die() {
    echo "$(basename "$0"): $*" >&2
    exit 1
}

backup_say() {
    echo "$(basename "$0"): $*" >&2
}

# Seconds since the epoch, and a duration in seconds as "12 s" or "3 min 4 s".
backup_now() { date +%s; }
backup_took() {
    local seconds=$(($(backup_now) - $1))
    if [ "$seconds" -lt 60 ]; then echo "$seconds s"; else echo "$((seconds / 60)) min $((seconds % 60)) s"; fi
}

# backup_pg PROGRAM: the path of a PostgreSQL program: from PG_BIN when set, else from PATH, else from the newest
# /usr/lib/postgresql/*/bin (Debian puts pg_verifybackup and pg_ctl only there).
backup_pg() {
    if [ -n "${PG_BIN:-}" ]; then
        echo "$PG_BIN/$1"
    elif command -v "$1" >/dev/null 2>&1; then
        command -v "$1"
    else
        local bin
        # shellcheck disable=SC2012 # the same lookup as scripts/lib/postgres.sh
        bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
        [ -n "$bin" ] && [ -x "$bin/$1" ] || backup_die "$1 not found: install postgresql-client, or set PG_BIN"
        echo "$bin/$1"
    fi
}

# backup_database_url URL: splits a postgres:// URL. The password moves to PGPASSWORD (exported), so it never
# appears in a process list or in the manifest. Sets backup_url (the URL without its password), backup_database (the
# database's name, decoded) and backup_admin_url (the same server's `postgres` database, to create databases from).
backup_database_url() {
    local url="$1"
    [[ "$url" =~ ^(postgres|postgresql)://(([^@/?]*)@)?([^/?]*)(/([^?]*))?(\?.*)?$ ]] \
        || backup_die "the database URL is not postgres://[user[:password]@]host[:port]/database[?options]"
    local scheme="${BASH_REMATCH[1]}" userinfo="${BASH_REMATCH[3]}" hosts="${BASH_REMATCH[4]}"
    local path="${BASH_REMATCH[6]}" query="${BASH_REMATCH[7]}"
    [ -n "$path" ] || backup_die "the database URL names no database"
    local user="${userinfo%%:*}"
    if [[ "$userinfo" == *:* ]]; then
        PGPASSWORD="$(backup_url_decode "${userinfo#*:}")"
        export PGPASSWORD
    fi
    local authority="${user:+$user@}$hosts"
    # shellcheck disable=SC2034 # set for the script that called
    backup_database="$(backup_url_decode "$path")"
    # shellcheck disable=SC2034
    backup_url="$scheme://$authority/$path$query"
    # shellcheck disable=SC2034
    backup_admin_url="$scheme://$authority/postgres$query"
}

# Percent-decoding as libpq does it ("+" stays "+").
backup_url_decode() {
    local text="${1//\\/\\\\}"
    printf '%b' "${text//%/\\x}"
}

# backup_psql URL SQL: one query, unaligned, no psqlrc; fails on the first error.
backup_psql() {
    PGAPPNAME=stadiumcloud-backup "$(backup_pg psql)" -X -q -A -t -v ON_ERROR_STOP=1 -d "$1" -c "$2"
}

# backup_major PROGRAM: the major version of a PostgreSQL client program ("pg_dump (PostgreSQL) 15.18 …" → 15).
backup_major() {
    "$1" --version | sed -n 's/^[^0-9]*\([0-9][0-9]*\).*/\1/p' | head -n 1
}

# copy_blobs FROM TO [link]: adds to the folder TO every file under FROM that TO lacks (blobs/<owner>/<sha256>), with
# its mode and time; never overwrites or deletes. A file appears in TO whole or not at all: rsync writes each under a
# temporary name and renames it; without rsync, or with "link" (hard links, same filesystem), files go to a folder
# beside TO first and are linked into TO once all are complete. A blob the collector removes from FROM while this
# runs is skipped (the database no longer has its row either). Prints "N files, B bytes" copied.
copy_blobs() {
    local from="$1" to="$2" link="${3:-}" list
    [ -d "$from" ] || backup_die "no folder $from"
    mkdir -p "$to"
    from="$(cd "$from" && pwd)" to="$(cd "$to" && pwd)"
    list="$(mktemp)"
    # Names starting with a dot are rsync's temporary files.
    comm -z -23 \
        <(cd "$from" && find . -type f ! -name '.*' -print0 | LC_ALL=C sort -z) \
        <(cd "$to" && find . -type f ! -name '.*' -print0 | LC_ALL=C sort -z) >"$list"
    local count bytes=0
    count="$(tr -cd '\0' <"$list" | wc -c)"
    if [ "$count" -gt 0 ]; then
        # (A blob collected since it was listed has no size: left out.)
        bytes="$( (cd "$from" && xargs -0 -r stat -c %s -- <"$list" 2>/dev/null || true) | awk '{ s += $1 } END { print s + 0 }')"
    fi
    if [ "$count" -eq 0 ]; then
        :
    elif [ -z "$link" ] && command -v rsync >/dev/null 2>&1; then
        local status=0
        rsync -a --ignore-existing --from0 --files-from="$list" "$from/" "$to/" || status=$?
        # 24: some files vanished before they could be copied (collected meanwhile).
        [ "$status" -eq 0 ] || [ "$status" -eq 24 ] || { rm -f "$list"; backup_die "rsync failed ($status) copying $from to $to"; }
    else
        local staging="${to%/}.incoming"
        rm -rf "$staging"
        mkdir -p "$staging"
        if ! (cd "$from" && xargs -0 -r cp -a ${link:+-l} --parents -t "$staging" -- <"$list"); then
            # Acceptable only if every file that failed is gone from FROM (collected meanwhile).
            local file failed=""
            while IFS= read -r -d '' file; do
                if [ -e "$from/$file" ] && [ ! -e "$staging/$file" ]; then failed="$file"; break; fi
            done <"$list"
            [ -z "$failed" ] || { rm -f "$list"; backup_die "could not copy $from/$failed"; }
        fi
        cp -a -l "$staging/." "$to/"
        rm -rf "$staging"
    fi
    rm -f "$list"
    echo "$count files, $bytes bytes"
}

# missing_blobs URL ASSETS_DIR: the assets the database at URL has rows for whose bytes are not in ASSETS_DIR
# (blobs/db<database id>/<sha256>), one "db<id>/<sha256>" a line.
missing_blobs() {
    local url="$1" assets="$2"
    backup_psql "$url" "SELECT 'db' || database_id || '/' || lower(checksum) FROM assets ORDER BY 1" \
        | while IFS= read -r blob; do [ -e "$assets/blobs/$blob" ] || echo "$blob"; done
}

# dump_missing_blobs DUMP BLOBS_DIR: the same for the assets table inside a pg_dump archive.
dump_missing_blobs() {
    local dump="$1" blobs="$2"
    "$(backup_pg pg_restore)" --data-only --table=assets -f - "$dump" \
        | awk '/^COPY .*assets .* FROM stdin;$/ { copying = 1; next } /^\\\.$/ { copying = 0 } copying { print "db" $1 "/" tolower($2) }' \
        | while IFS= read -r blob; do [ -e "$blobs/$blob" ] || echo "$blob"; done
}

# backup_server_version: `git describe` of the checkout these scripts are in, else "unknown".
backup_server_version() {
    git -C "$(dirname "$0")" describe --tags --always 2>/dev/null || echo unknown
}
