#!/usr/bin/env bash
# Writes at the hardware's pace: wrk for BENCH_SECONDS (default 10) a row, at 32 connections and at 1, against a
# durable PostgreSQL (PG_DURABLE=1), each row with what it cost the server and PostgreSQL in CPU per request (from
# /proc, PostgreSQL's postmaster and every backend), beside pgbench's raw single-row upserts with their own commits
# in the same run, and the floor (one SELECT 1 through the same HTTP stack; each row prints its share of the floor's
# req/s): single-record saves to one account (a new record each), forceUpdate and forceReplace of one
# record, saves over 32 accounts, and votes of 1,000 accounts on one public trip poll. BENCH_ROUNDS (default 1)
# repeats the rows. BENCH_STATEMENTS=1 prints after each row the statements that cost PostgreSQL most (planning and
# execution, from pg_stat_statements).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/postgres.sh
source scripts/lib/bench-server.sh
source scripts/lib/bench-cpu.sh
bench_start_app
app="/database/1/iCloud.com.sportstime.app/development"

# Accounts: 1,000 voters (the first 32 also save to their own databases), made 4 at a time.
mkdir "$bench_work/accounts"
seq 1 1000 | xargs -P 4 -I{} sh -c "'$bin' accounts create voter{} --password-hash-cost 10 >'$bench_work/accounts/{}' 2>&1"
token_of() { sed -n 's/^ckWebAuthToken: //p' "$bench_work/accounts/$1"; }
record_name_of() { sed -n 's/^userRecordName: //p' "$bench_work/accounts/$1"; }
for i in $(seq 1 1000); do [ -n "$(token_of "$i")" ] || { echo "accounts create voter$i: $(cat "$bench_work/accounts/$i")" >&2; exit 1; }; done
query="ckAPIToken=$api_token&ckWebAuthToken=$web_token"

# wrk scripts. A save of a new record each time: the name is the thread's number and a counter.
cat >"$bench_work/new.lua" <<'EOF'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local threads, n = 0, 0
function setup(thread) threads = threads + 1; thread:set("me", threads) end
function request()
  n = n + 1
  return wrk.format(nil, nil, nil, '{"operations":[{"operationType":"forceReplace","record":{"recordName":"v' .. me .. '-' .. n ..
    '","recordType":"Visit","fields":{"n":{"value":1},"notes":{"value":"A visit to the ballpark with friends"}}}}]}')
end
EOF
one_record() {  # one_record FILE OPERATION
    printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = %s\n' \
        "'{\"operations\":[{\"operationType\":\"$2\",\"record\":{\"recordName\":\"shared\",\"recordType\":\"Visit\",\"fields\":{\"n\":{\"value\":1},\"notes\":{\"value\":\"A visit to the ballpark with friends\"}}}}]}'" >"$1"
}
one_record "$bench_work/update.lua" forceUpdate
one_record "$bench_work/replace.lua" forceReplace
rotating() {  # rotating FILE ENTRY...: takes the {path, body} entries in turn, each wrk thread from its own start
    {
        echo 'local entries = {'
        printf '  %s\n' "${@:2}"
        echo '}'
        echo 'local next = 0'
        echo 'local headers = {["Content-Type"] = "application/json"}'
        echo 'local threads = 0'
        echo 'function setup(thread) threads = threads + 1; thread:set("first", threads * 17) end'
        echo 'function init(args) next = first % #entries end'
        echo 'function request() next = next % #entries + 1; return wrk.format("POST", entries[next][1], headers, entries[next][2]) end'
    } >"$1"
}
saves=()
for i in $(seq 1 32); do
    saves+=("{\"$app/private/records/modify?ckAPIToken=$api_token&ckWebAuthToken=$(token_of "$i")\", [[{\"operations\":[{\"operationType\":\"forceReplace\",\"record\":{\"recordName\":\"visit\",\"recordType\":\"Visit\",\"fields\":{\"n\":{\"value\":1}}}}]}]]},")
done
rotating "$bench_work/accounts.lua" "${saves[@]}"

# The poll: one voter makes it (an unlisted zone of the public database), then all vote, each changing their vote.
poll_zone="unlisted-benchpoll0123456789abcdef"
owner_query="ckAPIToken=$api_token&ckWebAuthToken=$(token_of 1)"
curl -sf -X POST -H 'Content-Type: application/json' "$bench_url$app/public/zones/modify?$owner_query" \
    -d "{\"operations\":[{\"operationType\":\"create\",\"zone\":{\"zoneID\":{\"zoneName\":\"$poll_zone\"}}}]}" >/dev/null
curl -sf -X POST -H 'Content-Type: application/json' "$bench_url$app/public/records/modify?$owner_query" \
    -d "{\"zoneID\":{\"zoneName\":\"$poll_zone\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"poll\",\"recordType\":\"TripPoll\",\"fields\":{\"title\":{\"value\":\"Where next\"},\"options\":{\"value\":[\"Boston\",\"Denver\",\"Seattle\"]}}}}]}" >/dev/null
votes=()
for i in $(seq 1 1000); do
    votes+=("{\"$app/public/records/modify?ckAPIToken=$api_token&ckWebAuthToken=$(token_of "$i")\", [[{\"zoneID\":{\"zoneName\":\"$poll_zone\"},\"operations\":[{\"operationType\":\"forceUpdate\",\"record\":{\"recordName\":\"vote-$(record_name_of "$i")\",\"recordType\":\"PollVote\",\"fields\":{\"option\":{\"value\":$((i % 3))}}}}]}]]},")
done
rotating "$bench_work/votes.lua" "${votes[@]}"

psql -q "$STADIUMCLOUD_DATABASE_URL" -c "CREATE TABLE raw_upsert (id int PRIMARY KEY, n int, notes text)"
echo "\\set id random(1, 10000000)
INSERT INTO raw_upsert VALUES (:id, 1, 'A visit to the ballpark with friends') ON CONFLICT (id) DO UPDATE SET n = raw_upsert.n + 1;" \
    >"$bench_work/raw.sql"
raw_row() { row "raw single-row upsert, its own commit (pgbench)" "$1" pgbench -n -M prepared -c "$1" -j "$(($1 > 1 ? 2 : 1))" -T "$seconds" -f "$bench_work/raw.sql" "$STADIUMCLOUD_DATABASE_URL"; }

# Warm-up, then statistics: a statement's cached generic plan is made from the statistics of its first executions, and
# a fresh records table has none, so until autovacuum's first ANALYZE (up to a minute) every save's read scanned
# the whole table (a first round measured 3× the PostgreSQL CPU of the second). A server that has run a while
# has them; this measures that server.
wrk -t 2 -c 32 -d 3s -s "$bench_work/new.lua" "$bench_url$app/private/records/modify?$query" >/dev/null
psql -q "$STADIUMCLOUD_DATABASE_URL" -c "ANALYZE"

echo "$seconds s a row, durable PostgreSQL, release build"
for round in $(seq 1 "${BENCH_ROUNDS:-1}"); do
    [ "$round" = 1 ] || echo
    floor_row 32
    raw_row 32
    wrk_row "save of a new record, one account" 32 "$bench_work/new.lua" "$bench_url$app/private/records/modify?$query"
    wrk_row "forceUpdate of one record, one account" 32 "$bench_work/update.lua" "$bench_url$app/private/records/modify?$query"
    wrk_row "forceReplace of one record, one account" 32 "$bench_work/replace.lua" "$bench_url$app/private/records/modify?$query"
    wrk_row "save, 32 accounts" 32 "$bench_work/accounts.lua" "$bench_url"
    wrk_row "vote on one public poll, 1,000 accounts" 32 "$bench_work/votes.lua" "$bench_url"
    floor_row 1
    raw_row 1
    wrk_row "save of a new record, one account" 1 "$bench_work/new.lua" "$bench_url$app/private/records/modify?$query"
done
