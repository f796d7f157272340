#!/usr/bin/env bash
# Records written at memory speed: wrk for BENCH_SECONDS (default 10) a row at 32 connections, each row with what it
# cost the server and PostgreSQL in CPU per request and per record (from /proc), beside pgbench reading the same
# rows with a raw SELECT in the same run: a first-sync page (200 of a zone's 2,000 records, no token) and a
# 100-change delta of one account's private zone, and the floor (one SELECT 1 through the same HTTP stack).
# BENCH_ROUNDS (default 1) repeats the rows; BENCH_STATEMENTS=1 prints the statements that cost PostgreSQL most.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/postgres.sh
source scripts/lib/bench-server.sh
source scripts/lib/bench-cpu.sh
bench_start_app
zone_url="$bench_url/database/1/iCloud.com.sportstime.app/development/private"
query="ckAPIToken=$api_token&ckWebAuthToken=$web_token"
post() { curl -sS --fail-with-body -X POST -H 'Content-Type: application/json' "$zone_url/$1?$query" -d @-; }

# 2,000 visits in a zone of their own, as the app writes them, 100 a request; the delta's token after the 1,900th.
echo '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"visits"}}}]}' | post zones/modify >/dev/null
visits() {  # visits FIRST LAST: a records/modify body creating those visits
    python3 - "$1" "$2" <<'PY'
import json, sys
first, last = int(sys.argv[1]), int(sys.argv[2])
teams = ["Boston Red Sox", "New York Yankees", "Chicago Cubs", "Los Angeles Dodgers", "Seattle Mariners"]
def visit(i):
    return {"recordName": f"visit-{i:05d}", "recordType": "StadiumVisit", "fields": {
        "stadium": {"value": {"recordName": f"stadium-{i % 120}", "action": "NONE"}},
        "visitDate": {"value": 1735689600000 + i * 86400000},
        "sport": {"value": "MLB"},
        "homeTeamName": {"value": teams[i % 5]}, "awayTeamName": {"value": teams[(i + 2) % 5]},
        "homeScore": {"value": i % 11}, "awayScore": {"value": i % 7},
        "seatSection": {"value": "112"}, "seatRow": {"value": "F"},
        "notes": {"value": "Sat behind the visitors' dugout; hot dogs and a late home run."}}}
print(json.dumps({"zoneID": {"zoneName": "visits"},
                  "operations": [{"operationType": "create", "record": visit(i)} for i in range(first, last + 1)]}))
PY
}
for first in $(seq 1 100 1801); do visits "$first" $((first + 99)) | post records/modify >/dev/null; done
token=""
while :; do
    page="$(echo "{\"zones\":[{\"zoneID\":{\"zoneName\":\"visits\"},\"syncToken\":\"$token\"}]}" | post changes/zone)"
    token="$(echo "$page" | python3 -c 'import json,sys; print(json.load(sys.stdin)["zones"][0]["syncToken"])')"
    [ "$(echo "$page" | python3 -c 'import json,sys; print(json.load(sys.stdin)["zones"][0]["moreComing"])')" = True ] || break
done
visits 1901 2000 | post records/modify >/dev/null
psql -q "$STADIUMCLOUD_DATABASE_URL" -c "ANALYZE"

body_script() {  # body_script FILE BODY
    printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = %s\n' "'$2'" >"$1"
}
body_script "$bench_work/first.lua" '{"zones":[{"zoneID":{"zoneName":"visits"},"resultsLimit":200}]}'
body_script "$bench_work/delta.lua" "{\"zones\":[{\"zoneID\":{\"zoneName\":\"visits\"},\"syncToken\":\"$token\"}]}"
for name in first delta; do
    count="$(curl -sf -X POST -H 'Content-Type: application/json' "$zone_url/changes/zone?$query" \
        -d "$(sed -n "s/^wrk.body = '\(.*\)'$/\1/p" "$bench_work/$name.lua")" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["zones"][0]["records"]))')"
    [ "$count" = "$([ $name = first ] && echo 200 || echo 100)" ] || { echo "the $name page has $count records" >&2; exit 1; }
done

# The raw SELECT of the same rows: the columns a page reads, by the same index.
zone_id="$(psql -qAt "$STADIUMCLOUD_DATABASE_URL" -c "SELECT id FROM zones WHERE zone_name = 'visits'")"
columns="record_name, record_type, change_seq, deleted, answer"
delta_from="$(psql -qAt "$STADIUMCLOUD_DATABASE_URL" -c "SELECT change_seq FROM records WHERE zone_id = $zone_id ORDER BY change_seq OFFSET 1899 LIMIT 1")"
echo "SELECT $columns FROM records WHERE zone_id = $zone_id AND NOT deleted ORDER BY change_seq LIMIT 201;" >"$bench_work/raw-first.sql"
echo "SELECT $columns FROM records WHERE zone_id = $zone_id AND change_seq > $delta_from ORDER BY change_seq LIMIT 201;" >"$bench_work/raw-delta.sql"

# page_rows NAME RECORDS SCRIPT RAW: the server's page and the raw SELECT, and what a record costs each side.
page_rows() {
    row "raw SELECT of the same rows (pgbench)" 32 pgbench -n -M prepared -c 32 -j 2 -T "$seconds" -f "$4" "$STADIUMCLOUD_DATABASE_URL"
    local raw_pg="$row_pg_us"
    row "$1" 32 wrk -t 2 -c 32 -d "${seconds}s" --latency -s "$3" "$zone_url/changes/zone?$query"
    printf "    per record: server %s µs (%s above the floor's request), PostgreSQL %s µs; PostgreSQL per page %s× the raw SELECT\n" \
        "$(awk "BEGIN {printf \"%.1f\", $row_server_us / $2}")" "$(awk "BEGIN {printf \"%.1f\", ($row_server_us - $floor_server_us) / $2}")" \
        "$(awk "BEGIN {printf \"%.1f\", $row_pg_us / $2}")" \
        "$(awk "BEGIN {printf \"%.2f\", $row_pg_us / ($raw_pg > 0 ? $raw_pg : 1)}")"
}

echo "$seconds s a row, durable PostgreSQL, release build, 32 connections"
for round in $(seq 1 "${BENCH_ROUNDS:-1}"); do
    [ "$round" = 1 ] || echo
    floor_row 32
    page_rows "first-sync page, 200 of 2,000 records" 200 "$bench_work/first.lua" "$bench_work/raw-first.sql"
    page_rows "100-change delta" 100 "$bench_work/delta.lua" "$bench_work/raw-delta.sql"
done
