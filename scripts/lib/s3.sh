# An S3-compatible server for tests: moto in server mode (PyPI), on a loopback port, with one bucket.
# Source it (after scripts/lib/postgres.sh, for free_port), then: s3_start DIR sets S3_LOCATION (an s3:// URL);
# s3_stop DIR. Credentials are moto's dummies, exported for the server and the tests.

s3_start() {
    local dir="$1" port
    python3 -c 'import moto.server, boto3' 2>/dev/null \
        || python3 -m pip install --quiet --disable-pip-version-check "moto[server]==5.2.1" >&2
    port="$(free_port 24123)"
    export AWS_ACCESS_KEY_ID=stadiumcloud-test AWS_SECRET_ACCESS_KEY=stadiumcloud-test AWS_REGION=us-east-1
    python3 -m moto.server -H 127.0.0.1 -p "$port" >"$dir/moto.log" 2>&1 &
    echo $! >"$dir/moto.pid"
    for _ in $(seq 1 100); do
        curl -sf "http://127.0.0.1:$port/" >/dev/null 2>&1 && break
        sleep 0.1
    done
    python3 - "$port" <<'PY' >&2
import sys, boto3
boto3.client("s3", endpoint_url=f"http://127.0.0.1:{sys.argv[1]}", region_name="us-east-1").create_bucket(Bucket="stadiumcloud")
PY
    # The smallest parts S3 allows, so the tests' assets span several.
    S3_LOCATION="s3://stadiumcloud?endpoint=http://127.0.0.1:$port&partSize=5242880"
}

s3_stop() {
    [ -f "$1/moto.pid" ] && kill "$(cat "$1/moto.pid")" 2>/dev/null || true
}
