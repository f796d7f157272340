"""History forks (docs/RELIABILITY.md, "History forks"): the database goes back in time under a live service.

restore-new-db (the database dropped, created again and restored from a `pg_dump -Fc` taken earlier), restore-clean
(`pg_restore --clean --if-exists` over the same database) and failover (the primary crashes and a streaming replica,
stopped earlier so that it lags, is promoted on the primary's port while the server keeps running). Writes made after
the backup point are lost, and PostgreSQL's sequences hand their ids out again. The server must notice, refuse every
change token and web auth session of the lost history, and devices must end up holding what the server holds
without losing their unsent edits. Each scenario runs on a durable PostgreSQL and a server process of its own.
"""
import base64
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time
import urllib.parse
import uuid

from run import BASE, CONTAINER, ROOT, Failure, Server, expect, request, sh

DATABASE = "stadiumcloud"


def command(args, stdin=None, what=None):
    """Runs a program (no shell); its stdout, or Failure with the end of its stderr."""
    done = subprocess.run(args, cwd=ROOT, text=True, capture_output=True, input=stdin)
    if done.returncode != 0:
        raise Failure(f"{what or os.path.basename(args[0])} failed ({done.returncode}): {done.stderr.strip()[-1500:]}")
    return done.stdout


def pg_tool(name):
    return os.path.join(sh("pg_bin_dir"), name)


class Checks:
    """The scenario's promises: every one is checked and reported, then the run fails naming each that broke."""

    def __init__(self, scenario):
        self.scenario, self.passed, self.failed = scenario, [], []

    def __call__(self, name, condition, detail=""):
        (self.passed if condition else self.failed).append(name if condition else f"{name}: {detail}")
        return condition

    def finish(self):
        if self.failed:
            raise Failure(f"{self.scenario}: {len(self.failed)} of {len(self.passed) + len(self.failed)} promises broken:\n  - "
                          + "\n  - ".join(self.failed))


class Cluster:
    """A durable PostgreSQL of the scenario's own (PG_DURABLE=1: fsync and synchronous commit on) serving the database
    `stadiumcloud`, and, on demand, a streaming replica of it."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="stadiumcloud-faults-history.")
        os.chmod(self.root, 0o755)
        self.primary = os.path.join(self.root, "primary")
        self.replica = os.path.join(self.root, "replica")
        self.port = int(sh("free_port 28432"))
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/{DATABASE}"
        self.started = []

    def start(self, data=None, port=None):
        data = data or self.primary
        if data not in self.started:
            self.started.append(data)
        sh(f"pg_start '{data}' {port or self.port}", PG_DURABLE="1")

    def psql(self, sql, database=DATABASE, port=None):
        return command([pg_tool("psql"), "-h", "127.0.0.1", "-p", str(port or self.port), "-U", "postgres", "-d", database,
                        "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql], what=f"psql `{sql[:80]}`").strip()

    def crash(self, data=None):
        """Stops PostgreSQL the hard way (immediate: no checkpoint, as when its machine dies)."""
        sh(f"pg_as_owner \"$(pg_bin_dir)/pg_ctl\" -D '{data or self.primary}' -m immediate -w stop >/dev/null")

    def dump(self, path):
        command([pg_tool("pg_dump"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-Fc", "-f", path, DATABASE])

    def restore(self, path, clean):
        """Into a new database of the same name (DROP, CREATE), or over the same one (--clean --if-exists)."""
        if not clean:
            self.psql(f"DROP DATABASE {DATABASE} WITH (FORCE)", database="postgres")
            self.psql(f"CREATE DATABASE {DATABASE}", database="postgres")
        command([pg_tool("pg_restore"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", DATABASE,
                 *(["--clean", "--if-exists"] if clean else []), path])

    def make_replica(self):
        """An asynchronous streaming replica (`pg_basebackup -R`) on a port of its own, caught up with the primary and
        then stopped: from here on it lags. Returns how many replicas the primary saw streaming."""
        os.makedirs(self.replica)
        sh(f"chown postgres:postgres '{self.replica}' 2>/dev/null || true; chmod 700 '{self.replica}'")
        sh(f"pg_as_owner \"$(pg_bin_dir)/pg_basebackup\" -h 127.0.0.1 -p {self.port} -U postgres -D '{self.replica}' -R -X stream -c fast")
        # The primary's socket lives in its data folder (pg_start's -k), and the copy brings its lock file along.
        sh(f"rm -f '{self.replica}'/.s.PGSQL.*")
        port = int(sh("free_port 28532"))
        self.start(self.replica, port)
        target = self.psql("SELECT pg_current_wal_lsn()")
        deadline = time.time() + 30
        while self.psql(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn", port=port) != "t":
            expect(time.time() < deadline, "the replica did not catch up with the primary in 30 s")
            time.sleep(0.1)
        streaming = int(self.psql("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"))
        sh(f"pg_stop '{self.replica}'")
        return streaming

    def promote_replica(self, standby_seconds):
        """Starts the stopped replica on the primary's address, leaves it a read-only standby for `standby_seconds`
        (clients reach it before it is promoted, as through a balancer that switched first) and promotes it; when the
        promotion was done. It
        streams from nobody (it would otherwise connect to its own port, where the primary was)."""
        with open(os.path.join(self.replica, "postgresql.auto.conf"), "a") as conf:
            conf.write("primary_conninfo = ''\n")
        self.start(self.replica, self.port)
        time.sleep(standby_seconds)
        sh(f"pg_as_owner \"$(pg_bin_dir)/pg_ctl\" -D '{self.replica}' -w -t 30 promote >/dev/null")
        return time.time()

    def stop(self):
        for data in self.started:
            sh(f"pg_stop '{data}'")
        subprocess.run(["rm", "-rf", self.root])


def scrypt_hash(password):
    """A PHC scrypt hash as the server writes them (PasswordHash.swift), at cost 10 as `serve --password-hash-cost 10`
    makes them: the CLI always hashes at 15, several seconds each in a debug build on 2 cores."""
    salt = os.urandom(16)
    key = hashlib.scrypt(password.encode(), salt=salt, n=1 << 10, r=8, p=3, dklen=32, maxmem=64 << 20)
    b64 = lambda data: base64.b64encode(data).decode().rstrip("=")  # noqa: E731
    return f"$scrypt$ln=10,r=8,p=3${b64(salt)}${b64(key)}"


class World:
    """What one history scenario runs on: its cluster, its server, an API token and an operator's server-to-server key;
    it counts every HTTP status its raw clients see."""

    def __init__(self, ctx, name):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="stadiumcloud-faults-world.")
        self.cluster = Cluster()
        self.server = None
        self.statuses, self.errors, self.lock = {}, [], threading.Lock()
        self.binary = ctx.server.binary

    def setup(self):
        name = self.name
        self.cluster.start()
        self.cluster.psql(f"CREATE DATABASE {DATABASE}", database="postgres")
        log = f"{name}.log"
        open(os.path.join(ROOT, ".stadiumcloud", "faults", log), "w").close()  # this run's lines only
        self.server = Server(self.binary, self.cluster.url, os.path.join(self.dir, "assets"), port_from=23080,
                             extra=["--password-hash-cost", "10"], log=log)
        self.server.cli("migrate", "up")
        self.server.cli("schema", "apply", "Resources/schema.json")
        self.api_token = self.server.cli("tokens", "create", "--label", "faults").strip()
        self.server.start()
        self.operator = Operator(self)

    @property
    def port(self):
        return self.server.port

    def count(self, status, operation=None, body=b""):
        with self.lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if isinstance(status, int) and status >= 500 and status != 503 and len(self.errors) < 5:
                self.errors.append(f"{status} from {operation}: {body[:160].decode(errors='replace')}")

    def account(self, prefix, password=None):
        """A new account: (name, userRecordName, the web auth token `accounts create` prints). With a password, the
        person can also sign in (the hash is written as the server would write it; see scrypt_hash)."""
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        out = self.server.cli("accounts", "create", name)
        fields = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
        if password:
            self.cluster.psql(f"UPDATE accounts SET password_hash = '{scrypt_hash(password)}' WHERE name = '{name}'")
        return name, fields["userRecordName"], fields["ckWebAuthToken"]

    def sign_in(self, name, password):
        status, _, body = request(self.port, "POST", "/signin", {"accountName": name, "password": password, "keepSignedIn": True},
                                  {"Content-Type": "application/json", "Accept": "application/json"})
        self.count(status, "/signin", body)
        expect(status == 200, f"signing in {name} answered {status}: {body[:200]}")
        return json.loads(body)["ckWebAuthToken"]

    def stop_server(self):
        if self.server and self.server.process and self.server.process.poll() is None:
            self.server.process.send_signal(signal.SIGTERM)
            try:
                self.server.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.server.kill9()

    def close(self):
        try:
            self.stop_server()
        finally:
            self.cluster.stop()
            subprocess.run(["rm", "-rf", self.dir])

    def log_text(self):
        with open(self.server.log_path, errors="replace") as log:
            return log.read()


class Caller:
    """Raw CloudKit Web Services calls with the API token and, for a person, a web auth token (kept, never rotated:
    a token whose successor is never used stays valid, docs/AUTH.md)."""

    def __init__(self, world, token=None):
        self.world, self.token = world, token

    def path(self, scope, operation):
        query = f"ckAPIToken={self.world.api_token}"
        if self.token:
            query += f"&ckWebAuthToken={urllib.parse.quote(self.token)}"
        return f"{BASE}/{scope}/{operation}?{query}"

    def call(self, scope, operation, body=None, method="POST"):
        """(status, JSON answer or {}); a connection error is the status "connection error"."""
        try:
            status, _, data = request(self.world.port, method, self.path(scope, operation), body if method == "POST" else None)
        except OSError:
            self.world.count("connection error")
            return "connection error", {}
        self.world.count(status, f"{scope}/{operation}", data)
        try:
            return status, json.loads(data) if data else {}
        except ValueError:
            return status, {"body": data[:200].decode(errors="replace")}

    def ok(self, scope, operation, body=None, method="POST"):
        status, reply = self.call(scope, operation, body, method)
        expect(status == 200, f"{scope}/{operation} answered {status}: {str(reply)[:300]}")
        return reply

    def write(self, scope, names, zone="_defaultZone", record_type="FaultNote", note="x", operation="forceUpdate"):
        reply = self.ok(scope, "records/modify", {"zoneID": {"zoneName": zone}, "operations": [
            {"operationType": operation, "record": {"recordName": n, "recordType": record_type, "fields": {"notes": {"value": note}}}}
            for n in names]})
        failed = [r for r in reply["records"] if "serverErrorCode" in r]
        expect(not failed, f"writing {names} answered {failed[:2]}")

    def create_zone(self, zone):
        self.ok("private", "zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": zone}}}]})

    def zone_changes(self, scope, zone, token):
        """One changes/zone of one zone from `token`: (HTTP status, serverErrorCode of the zone or of the answer, reply)."""
        entry = {"zoneID": {"zoneName": zone}, "resultsLimit": 200}
        if token:
            entry["syncToken"] = token
        status, reply = self.call(scope, "changes/zone", {"zones": [entry]})
        code = reply.get("serverErrorCode")
        if status == 200 and reply.get("zones"):
            code = reply["zones"][0].get("serverErrorCode")
        return status, code, reply

    def zone_state(self, scope, zone):
        """Every live record of a zone ({name: its notes}) and the token at its end, fetched from no token."""
        records, token = {}, None
        while True:
            status, code, reply = self.zone_changes(scope, zone, token)
            expect(status == 200 and not code, f"{scope} changes/zone {zone} answered {status} {code}: {str(reply)[:300]}")
            result = reply["zones"][0]
            for record in result.get("records", []):
                if record.get("deleted"):
                    records.pop(record["recordName"], None)
                else:
                    records[record["recordName"]] = notes(record.get("fields"))
            token = result["syncToken"]
            if not result.get("moreComing"):
                return records, token

    def state(self, scope):
        """{zone: record names} of the whole database as a fetch from no token answers it (public: its default zone)."""
        zones = ["_defaultZone"]
        if scope == "private":
            zones = [z["zoneID"]["zoneName"] for z in self.ok(scope, "zones/list", method="GET")["zones"]]
        return {zone: set(self.zone_state(scope, zone)[0]) for zone in zones}

    def database_token(self):
        token = None
        while True:
            reply = self.ok("private", "changes/database", {"syncToken": token} if token else {})
            token = reply["syncToken"]
            if not reply.get("moreComing"):
                return token


class Operator:
    """The operator's program: public-database writes signed with a server-to-server key (docs/AUTH.md), made with
    openssl, which also signs each request."""

    def __init__(self, world):
        self.world = world
        self.key = os.path.join(world.dir, "operator.pem")
        command(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", self.key])
        public = command(["openssl", "ec", "-in", self.key, "-pubout"])
        self.key_id = world.server.cli("keys", "add", "-", "--label", "faults operator", stdin=public).strip().split()[-1]

    def write(self, names, note):
        path = f"{BASE}/public/records/modify"
        body = json.dumps({"operations": [
            {"operationType": "forceUpdate", "record": {"recordName": n, "recordType": "FaultNotice", "fields": {"notes": {"value": note}}}}
            for n in names]}).encode()
        date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        message = f"{date}:{base64.b64encode(hashlib.sha256(body).digest()).decode()}:{path}"
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key], input=message.encode(), capture_output=True, check=True).stdout
        status, _, data = request(self.world.port, "POST", path, body, {
            "X-Apple-CloudKit-Request-KeyID": self.key_id, "X-Apple-CloudKit-Request-ISO8601Date": date,
            "X-Apple-CloudKit-Request-SignatureV1": base64.b64encode(signature).decode(), "Content-Type": "application/json"})
        self.world.count(status, "public/records/modify (signed)", data)
        expect(status == 200, f"the operator's public write answered {status}: {data[:300]}")
        failed = [r for r in json.loads(data)["records"] if "serverErrorCode" in r]
        expect(not failed, f"the operator's public write failed: {failed[:2]}")


class Follower:
    """A follower of the public database with no account (an app before sign-in): it keeps the records of the public
    default zone and fetches with its token, starting over when the server answers CHANGE_TOKEN_EXPIRED (or
    BAD_REQUEST, as the SDK does)."""

    def __init__(self, world):
        self.caller = Caller(world)
        self.records, self.token, self.restarts = {}, None, 0

    def sync(self):
        while True:
            status, code, reply = self.caller.zone_changes("public", "_defaultZone", self.token)
            if code in ("CHANGE_TOKEN_EXPIRED", "BAD_REQUEST") and self.token and self.restarts < 3:
                self.records, self.token = {}, None
                self.restarts += 1
                continue
            expect(status == 200 and not code, f"the public follower's fetch answered {status} {code}: {str(reply)[:300]}")
            result = reply["zones"][0]
            for record in result.get("records", []):
                if record.get("deleted"):
                    self.records.pop(record["recordName"], None)
                else:
                    self.records[record["recordName"]] = notes(record.get("fields"))
            self.token = result["syncToken"]
            if not result.get("moreComing"):
                return


class PersonDevice:
    """The SDK's CLI (stadiumcloud-client) with a store of its own, signed in with a person's password: a person's
    second device signs in to the same account."""

    def __init__(self, world, account, password):
        self.world = world
        self.binary = os.path.join(os.path.dirname(world.server.binary), "stadiumcloud-client")
        self.store = os.path.join(world.dir, f"device-{uuid.uuid4().hex[:6]}.sqlite")
        self.env = {**os.environ, "STADIUMCLOUD_PASSWORD": password, "STADIUMCLOUD_API_TOKEN": world.api_token}
        self.run("signin", account, "--server", f"http://127.0.0.1:{world.port}", "--container", CONTAINER)

    def run(self, *args):
        done = subprocess.run([self.binary, *args, "--store", self.store], cwd=ROOT, text=True, capture_output=True, env=self.env)
        if done.returncode != 0:
            raise Failure(f"stadiumcloud-client {args[0]} failed ({done.returncode}): {(done.stdout + done.stderr).strip()[-600:]}")
        return done.stdout

    def sync(self):
        """(exit status, output) of one `sync`."""
        done = subprocess.run([self.binary, "sync", "--store", self.store], cwd=ROOT, text=True, capture_output=True, env=self.env)
        return done.returncode, (done.stdout + done.stderr).strip()

    def synced(self, label):
        code, output = self.sync()
        expect(code == 0, f"{label}: the device's sync failed ({code}): {output[-600:]}")

    def add_visit(self, notes):
        """Queues a visit (works offline); its record name."""
        return self.run("visits", "add", "stadium_mlb_oracle_park", "--date", "2024-06-01", "--notes", notes).split()[0]

    def holds(self, scope, zone=None):
        """{zone: record names} this device holds (queued deletions excluded), read from its store; with `zone`, that
        zone's {name: notes}."""
        store = sqlite3.connect(f"file:{self.store}?mode=ro", uri=True)
        try:
            rows = store.execute("SELECT zone, recordName, fields FROM records WHERE scope = ? AND deleted = 0", (scope,)).fetchall()
        finally:
            store.close()
        if zone:
            return {name: notes(json.loads(fields)) for z, name, fields in rows if z == zone}
        held = {}
        for z, name, _ in rows:
            held.setdefault(z, set()).add(name)
        return held


def notes(fields):
    """The `notes` field's value of a record's fields (wire shape, or the device store's)."""
    value = (fields or {}).get("notes")
    return value.get("value") if isinstance(value, dict) else value


def flat(state):
    return {name for names in state.values() for name in names}


def differences(device, server):
    """What a device holds that the server does not, and the reverse, zone by zone (empty zones count as absent)."""
    out = []
    for zone in sorted(set(device) | set(server)):
        extra, missing = device.get(zone, set()) - server.get(zone, set()), server.get(zone, set()) - device.get(zone, set())
        if extra:
            out.append(f"{zone}: {len(extra)} the server does not have ({sorted(extra)[:4]})")
        if missing:
            out.append(f"{zone}: {len(missing)} missing ({sorted(missing)[:4]})")
    return "; ".join(out)


def expired(answer):
    """Whether a fetch with a stale token was answered CHANGE_TOKEN_EXPIRED (200 with the zone's error, or 410)."""
    status, code, _ = answer
    return code == "CHANGE_TOKEN_EXPIRED" and status in (200, 410)


def described(answer):
    status, code, reply = answer
    if code:
        return f"{status} {code} ({(reply.get('reason') or (reply.get('zones') or [{}])[0].get('reason') or '')[:120]})"
    records = ((reply.get("zones") or [{}])[0].get("records")) or []
    return f"{status}, a delta of {len(records)} records ({sorted(r.get('recordName') for r in records)[:4]})"


# MARK: the scenarios

def history_fork(ctx, kind):
    """Writes, a backup point, more writes, then the fork (`kind`); then people go on writing and every promise is
    checked (the module's docstring, docs/RELIABILITY.md)."""
    started = time.time()
    world = World(ctx, kind)
    try:
        world.setup()
        _history_fork(ctx, world, kind, started)
    finally:  # pass or fail, nothing this scenario started outlives it
        world.close()


def _history_fork(ctx, world, kind, started):
    check = Checks(kind)
    password = f"device-{uuid.uuid4().hex}"
    person_name, person_record, person_token = world.account("person", password)
    _, _, other_token = world.account("other")
    person, other = Caller(world, person_token), Caller(world, other_token)
    a, b = PersonDevice(world, person_name, password), PersonDevice(world, person_name, password)
    follower = Follower(world)

    # 1. Before the backup point: everyone writes and syncs.
    kept = [a.add_visit("before 1"), a.add_visit("before 2")]
    a.synced("before the backup")
    kept.append(b.add_visit("before 3 (device B)"))
    b.synced("before the backup")
    person.create_zone("Trips")
    person.write("private", ["trip-before"], zone="Trips")
    other.write("private", ["other-before-1", "other-before-2"])
    world.operator.write(["pub-1", "pub-2", "pub-3"], "canonical")
    follower.sync()
    a.synced("before the backup")
    b.synced("before the backup")
    if kind == "failover":
        streaming = world.cluster.make_replica()
        expect(streaming == 1, f"the primary saw {streaming} streaming replicas, not 1")
        backup = "a streaming replica (pg_basebackup -R), caught up and then stopped"
    else:
        dump = os.path.join(world.dir, "backup.dump")
        world.cluster.dump(dump)
        backup = f"pg_dump -Fc ({os.path.getsize(dump) // 1024} KiB)"

    # 2. After the backup point: all of this will be lost.
    lost_visits = [a.add_visit("lost 1"), a.add_visit("lost 2")]
    a.synced("after the backup")
    world.operator.write(["pub-1"], "changed after the backup")
    world.operator.write(["pub-lost"], "created after the backup")
    person.create_zone("Later")
    person.write("private", ["later-lost"], zone="Later")
    person.write("private", ["raw-lost"])
    late_default_token = person.zone_state("private", "_defaultZone")[1]
    late_zone_token = person.zone_state("private", "Later")[1]
    late_database_token = person.database_token()
    follower.sync()
    late_public_token = follower.token
    late_session = world.sign_in(person_name, password)
    status, seen = Caller(world, late_session).call("public", "users/current", method="GET")
    expect(status == 200 and seen.get("userRecordName") == person_record, f"the new sign-in did not work before the fork: {status} {seen}")
    _, lost_account_record, lost_account_token = world.account("lost")
    lost_account = Caller(world, lost_account_token)
    lost_account.write("private", ["lost-account-1", "lost-account-2"])
    lost_account_zone_token = lost_account.zone_state("private", "_defaultZone")[1]
    b.synced("after the backup")
    a.synced("after the backup")
    lost_names = set(lost_visits) | {"later-lost", "raw-lost"}
    expect(set(lost_visits) <= flat(b.holds("private")), "device B did not receive device A's visits before the fork")

    # 3. The fork. Device A queues a visit meanwhile (offline: the server or its database is away).
    stop_polling = threading.Event()
    fork_started = time.time()
    if kind == "failover":
        def poll():  # what clients see while PostgreSQL is away, then a read-only standby, then promoted
            sequence = 0
            while not stop_polling.is_set():
                other.call("private", "changes/zone", {"zones": [{"zoneID": {"zoneName": "_defaultZone"}}]})
                other.call("private", "records/modify", {"operations": [{"operationType": "forceUpdate", "record": {
                    "recordName": f"poll-{sequence}", "recordType": "FaultNote", "fields": {"notes": {"value": "during the failover"}}}}]})
                sequence += 1
                time.sleep(0.05)
        readiness = []

        def ask_ready():  # what /ready says meanwhile (reported; its own thread: it may wait its 2 s deadline)
            while not stop_polling.is_set():
                try:
                    status, _, body = request(world.port, "GET", "/ready", timeout=10)
                    answer = f"{status} {json.loads(body or b'{}').get('status')}"
                except (OSError, ValueError) as error:
                    answer = type(error).__name__
                if not readiness or readiness[-1][1] != answer:
                    readiness.append((time.time() - fork_started, answer))
                time.sleep(0.1)
        poller = threading.Thread(target=poll, daemon=True)
        prober = threading.Thread(target=ask_ready, daemon=True)
        poller.start()
        prober.start()
        try:
            world.cluster.crash()
            queued = a.add_visit("queued while the database was away")
            promoted_at = world.cluster.promote_replica(standby_seconds=1.5) - fork_started
            deadline = time.time() + 30
            while request(world.port, "GET", "/ready", timeout=10)[0] != 200:
                expect(time.time() < deadline, "the server did not serve the promoted replica within 30 s")
                time.sleep(0.2)
        finally:
            stop_polling.set()
            poller.join(timeout=30)
            prober.join(timeout=30)
        expect(world.server.process.poll() is None, "the server died during the failover")
        fork = f"primary crashed (immediate), replica started on its port, a read-only standby for 1.5 s, then promoted; the server serving it {time.time() - fork_started:.1f} s after the crash without a restart; /ready said {', then '.join(f'{a} at {t:.1f} s' for t, a in readiness)} (standby from {promoted_at - 1.5:.1f} s, promoted at {promoted_at:.1f} s)"
    else:
        world.stop_server()
        queued = a.add_visit("queued while the server was down")
        code, _ = a.sync()
        expect(code != 0, "device A synced with the server down")
        world.cluster.restore(dump, clean=kind == "restore-clean")
        world.server.start()
        fork = f"server stopped, {'pg_restore --clean --if-exists' if kind == 'restore-clean' else 'DROP/CREATE DATABASE + pg_restore'}, started again in {time.time() - fork_started:.1f} s"
    quoted = ", ".join(f"'{n}'" for n in lost_names | {"lost-account-1", "pub-lost"})
    left = world.cluster.psql(f"SELECT count(*) FROM records WHERE record_name IN ({quoted})")
    left_accounts = world.cluster.psql(f"SELECT count(*) FROM accounts WHERE user_record_name = '{lost_account_record}'")
    expect(left == "0" and left_accounts == "0", f"the database after the fork still has writes made after the backup point "
                                                 f"({left} records, {left_accounts} accounts): the fork did not go back")

    # 4. After the fork: people go on writing.
    lost_sessions = {"the person's sign-in after the backup": late_session, "the lost account's session": lost_account_token}

    def sessions_refused(when, newcomer_record=None, newcomer_names=()):
        for label, token in lost_sessions.items():
            lost = Caller(world, token)
            status, reply = lost.call("public", "users/current", method="GET")
            stolen = newcomer_record is not None and reply.get("userRecordName") == newcomer_record
            check(f"{label} is refused by users/current {when}", status in (401, 421) and not stolen,
                  f"{status} {str(reply)[:200]}" + (" (the NEW account's userRecordName)" if stolen else ""))
            if newcomer_names:
                status, code, reply = lost.zone_changes("private", "_defaultZone", None)
                read = {r.get("recordName") for r in ((reply.get("zones") or [{}])[0].get("records") or [])} & set(newcomer_names)
                check(f"{label} cannot read the new account's private records", not read, f"{status}: it read {sorted(read)}")

    sessions_refused("before the new account signs in")
    if kind == "failover":  # its writes were cut off by the crash: a write caught in one must not hold back the next
        other.write("private", ["other-after"])
    newcomer_name, newcomer_record, newcomer_token = world.account("newcomer", password)
    newcomer = Caller(world, newcomer_token)
    newcomer_names = ["newcomer-1", "newcomer-2", "newcomer-3"]
    newcomer.write("private", newcomer_names)
    newcomer_signin = world.sign_in(newcomer_name, password)
    sessions_refused("after the new account signed in", newcomer_record, newcomer_names)
    status, reply = Caller(world, newcomer_signin).call("public", "users/current", method="GET")
    check("the new account's own sign-in works", status == 200 and reply.get("userRecordName") == newcomer_record, f"{status} {reply}")
    answer = newcomer.zone_changes("private", "_defaultZone", lost_account_zone_token)
    check("a zone token of the lost account's database is refused to the new account (its database id came back)",
          answer[1] in ("CHANGE_TOKEN_EXPIRED", "BAD_REQUEST"), described(answer))

    person.create_zone("Later")
    person.write("private", ["later-after"], zone="Later")
    person.write("private", ["raw-after"])
    world.operator.write(["pub-after"], "created after the fork")
    after = [a.add_visit("after the fork")]
    syncs = {}
    for label, device in (("A", a), ("B", b), ("A again", a)):
        syncs[label] = device.sync()
        check(f"device {label.split()[0]}'s sync after the fork succeeds", syncs[label][0] == 0, syncs[label][1][-400:])

    refetched = next((line for line in syncs["A"][1].splitlines() if line.startswith("refetched")), "no zone refetched")

    # Tokens issued after the backup point name positions of the lost history.
    answers = {
        "a private zone token": person.zone_changes("private", "_defaultZone", late_default_token),
        "the token of the zone created after the backup and created again after the fork": person.zone_changes("private", "Later", late_zone_token),
        "a public zone token": Caller(world).zone_changes("public", "_defaultZone", late_public_token),
    }
    for label, answer in answers.items():
        check(f"{label} issued after the backup point answers CHANGE_TOKEN_EXPIRED", expired(answer), described(answer))
    status, reply = person.call("private", "changes/database", {"syncToken": late_database_token})
    check("a database token issued after the backup point answers 410 CHANGE_TOKEN_EXPIRED",
          status == 410 and reply.get("serverErrorCode") == "CHANGE_TOKEN_EXPIRED",
          f"{status} {reply.get('serverErrorCode') or ''} {str(reply.get('reason') or reply.get('zones') or '')[:150]}")

    # Devices hold exactly what the server holds for the person.
    server_state = person.state("private")
    on_server = flat(server_state)
    check("the server has none of the lost writes", not (on_server & lost_names), sorted(on_server & lost_names))
    check("the visit queued during the fork and the one after it reached the server", {queued, *after} <= on_server,
          f"missing {sorted({queued, *after} - on_server)}")
    check("what was written before the backup point is still there", set(kept) | {"trip-before"} <= on_server,
          f"missing {sorted((set(kept) | {'trip-before'}) - on_server)}")
    for label, device in (("A", a), ("B", b)):
        held = device.holds("private")
        check(f"device {label} holds exactly the server's records, zone by zone", not differences(held, server_state), differences(held, server_state))
        check(f"device {label} holds none of the lost writes", not (flat(held) & lost_names), sorted(flat(held) & lost_names))
        check(f"device {label} has the writes made after the fork", {queued, *after, "later-after", "raw-after"} <= flat(held),
              f"missing {sorted({queued, *after, 'later-after', 'raw-after'} - flat(held))}")

    # The public follower (and the devices, which follow the public default zone too) converge.
    follower.sync()
    public = person.zone_state("public", "_defaultZone")[0]

    def unlike(held):
        return (f"{sorted(set(held) - set(public))} too many, {sorted(set(public) - set(held))} missing, "
                f"{sorted(n for n in set(held) & set(public) if held[n] != public[n])} in another version")
    check("the public follower holds exactly the server's public records, in the server's version", follower.records == public,
          unlike(follower.records))
    for label, device in (("A", a), ("B", b)):
        held = device.holds("public", "_defaultZone")
        check(f"device {label}'s public records are the server's, in its version", held == public, unlike(held))

    log = world.log_text()
    warnings = [line for line in log.splitlines() if "history" in line.lower() and "fork" in line.lower()]
    check("the server's log warns that the database's history forked", warnings, "no line of the server's log mentions the history")
    server_errors = {s: n for s, n in world.statuses.items() if isinstance(s, int) and s >= 500 and s != 503}
    check("no 5xx other than 503", not server_errors, f"{server_errors}: {world.errors}")

    ctx.report(kind, f"backup point: {backup}; after it device A's 2 visits, a public change and a public create, a new zone "
                     f"with a record, a new sign-in, a new account with 2 records; fork: {fork}; then a new account, a zone of the "
                     f"same name created again, 2 visits on device A (one queued offline); device syncs after the fork: "
                     f"{', '.join(f'{k} exit {v[0]}' for k, v in syncs.items())} (A's first: {refetched}); the person holds {len(on_server)} records in "
                     f"{len(server_state)} zones; public follower restarted {follower.restarts}×; answers seen: "
                     f"{dict(sorted(world.statuses.items(), key=str))}; log: {warnings[0][-170:] if warnings else 'no line about the history'}; "
                     f"{len(check.passed)} promises held, {len(check.failed)} broken; {time.time() - started:.0f} s in all")
    check.finish()


SCENARIOS = {name: (lambda ctx, name=name: history_fork(ctx, name)) for name in ("restore-new-db", "restore-clean", "failover")}
