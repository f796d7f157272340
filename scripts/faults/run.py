#!/usr/bin/env python3
"""Fault scenarios against a real server process and a real PostgreSQL (docs/RELIABILITY.md).

  scripts/faults/run [--quick] [--load-seconds N] [--only NAME ...]

Scenarios: crash-batch (kill -9 during an atomic records/modify), crash-upload (kill -9 during an asset upload),
db-outage-1s/30s/120s (PostgreSQL crashed under load and away that long: 503s meanwhile, serving again
within 2 s of its return), cluster (3 processes behind nginx, one killed, one restarted), sigterm (graceful shutdown drains a request) and load
(a mixed workload of several accounts); in history.py, the database's history forking under the server:
restore-new-db (DROP/CREATE DATABASE and pg_restore of an earlier pg_dump), restore-clean (pg_restore --clean over
the same database) and failover (the primary crashed, a lagging replica promoted on its port while the server runs),
each on a PostgreSQL and a server of its own; in resources.py, resources running out: disk-full (the asset folder on
a 40 MB tmpfs), slow-clients (1,200 connections that never finish a request head; --max-connections), slow-bodies (1,000 trickled bodies from one address) and waiters
(long polls whose clients went away); in cache.py, 10,000 simulated devices polling the cacheable public reads
through nginx's cache while the data changes (cache). Each prints its figures; any broken promise fails the run. --quick is the
CI set: every scenario, with a 20-second load (and shorter loads in slow-clients). Standard library only.
"""
import argparse
import hashlib
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

# history.py and resources.py beside this file import its helpers as `from run import …`: run as a script, this module
# is `__main__`, and without the alias they would load a second copy (whose Failure the main loop would not catch).
sys.modules.setdefault("run", sys.modules[__name__])

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONTAINER = "iCloud.com.sportstime.app"
BASE = f"/database/1/{CONTAINER}/development"


def sh(script, **env):
    """Runs bash with the project's PostgreSQL helpers loaded."""
    full = f"source scripts/lib/postgres.sh\n{script}"
    done = subprocess.run(["bash", "-c", full], cwd=ROOT, text=True, capture_output=True, env={**os.environ, **env})
    if done.returncode != 0:
        raise Failure(f"`{script}` failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout.strip()


class Failure(Exception):
    pass


class Interrupted(Exception):
    """SIGTERM: scripts/test ended early."""


def interrupt(*_):
    raise Interrupted()


def expect(condition, message):
    if not condition:
        raise Failure(message)


class Postgres:
    """A durable throwaway cluster (fsync and synchronous commit on): crashing it must not lose acknowledged commits."""

    def __init__(self):
        self.data = tempfile.mkdtemp(prefix="stadiumcloud-faults-pg.")
        os.chmod(self.data, 0o755)
        # Below the kernel's ephemeral range (32768-60999 here): while PostgreSQL is down for an outage scenario, an
        # outgoing connection could take a port in that range as its own, and PostgreSQL could not listen again.
        self.port = int(sh("free_port 27432"))
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def start(self):
        sh(f"pg_start '{self.data}/pg' {self.port}", PG_DURABLE="1")

    def crash(self):
        """Stops PostgreSQL the hard way (immediate: no checkpoint, like a crash of the database server)."""
        sh(f"pg_as_owner \"$(pg_bin_dir)/pg_ctl\" -D '{self.data}/pg' -m immediate -w stop >/dev/null")

    def stop(self):
        sh(f"pg_stop '{self.data}/pg'")
        subprocess.run(["rm", "-rf", self.data])


class Server:
    """The stadiumcloud binary as a child process on a loopback port. A scenario with a server of its own gives it
    `extra` serve options, its own log file and a first port to try; `limits` runs in the child before exec."""

    def __init__(self, binary, database_url, assets, port_from=21080, extra=(), log="server.log", limits=None):
        self.binary, self.database_url, self.assets = binary, database_url, assets
        self.port = int(sh(f"free_port {port_from}"))
        self.process = None
        self.extra, self.limits = list(extra), limits
        self.log_path = os.path.join(ROOT, ".stadiumcloud", "faults", log)
        self.log = open(self.log_path, "a")

    def cli(self, *args, stdin=None):
        return subprocess.run([self.binary, *args], cwd=ROOT, check=True, text=True, capture_output=True, input=stdin,
                              env={**os.environ, "STADIUMCLOUD_DATABASE_URL": self.database_url}).stdout

    def start(self):
        self.process = subprocess.Popen(
            [self.binary, "serve", "--port", str(self.port), "--assets", self.assets, "--migrate",
             "--account-rate-limit", "1000000", "--token-rate-limit", "1000000", "--database-timeout-seconds", "3", *self.extra],
            cwd=ROOT, stdout=self.log, stderr=self.log, preexec_fn=self.limits,
            env={**os.environ, "STADIUMCLOUD_DATABASE_URL": self.database_url})
        deadline = time.time() + 60
        while time.time() < deadline:
            expect(self.process.poll() is None, f"the server exited while starting (see {os.path.relpath(self.log_path, ROOT)})")
            try:
                if request(self.port, "GET", "/ready")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise Failure("the server did not become ready in 60 s")

    def kill9(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def rss_kib(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0


def request(port, method, path, body=None, headers=None, timeout=30):
    """One HTTP request on a new connection; returns (status, headers, body bytes)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = body if isinstance(body, (bytes, bytearray)) or body is None else json.dumps(body).encode()
        connection.request(method, path, body=data, headers=headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    except http.client.HTTPException as error:
        # A process killed mid-answer leaves a truncated one (through nginx: its headers, then nothing). A client
        # treats that as a lost connection and retries with its key, as these scenarios' clients do on OSError.
        raise ConnectionError(f"truncated answer: {error!r}") from error
    finally:
        connection.close()


def slow_upload(port, path, payload, pause, headers=None):
    """POSTs `payload` in 256 KiB pieces with `pause` seconds between them; returns (status, body)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.putrequest("POST", path)
        for name, value in {"Content-Length": str(len(payload)), **(headers or {})}.items():
            connection.putheader(name, value)
        connection.endheaders()
        for start in range(0, len(payload), 256 * 1024):
            connection.send(payload[start:start + 256 * 1024])
            time.sleep(pause)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


class Account:
    def __init__(self, server, api_token, name):
        out = server.cli("accounts", "create", name)
        self.token = next(l.split(": ", 1)[1] for l in out.splitlines() if l.startswith("ckWebAuthToken"))
        self.api_token = api_token
        self.server = server

    def path(self, operation):
        return f"{BASE}/private/{operation}?ckAPIToken={self.api_token}&ckWebAuthToken={urllib.parse.quote(self.token)}"

    def call(self, operation, body, headers=None, timeout=30):
        status, response_headers, data = request(self.server.port, "POST", self.path(operation), body, headers, timeout)
        try:
            return status, response_headers, json.loads(data) if data else None
        except ValueError:  # not ours: a balancer's error page (nginx's 502 while a process is down)
            return status, response_headers, {"body": data[:200].decode(errors="replace")}


def visit(name, size=0):
    fields = {"notes": {"value": "x" * size if size else name}}
    return {"operationType": "create", "record": {"recordName": name, "recordType": "StadiumVisit", "fields": fields}}


def live_names(account, zone="_defaultZone"):
    """Every live record name in a zone, through changes/zone from the start."""
    names, token = set(), None
    while True:
        entry = {"zoneID": {"zoneName": zone}, "resultsLimit": 200}
        if token:
            entry["syncToken"] = token
        status, _, reply = account.call("changes/zone", {"zones": [entry]})
        expect(status == 200, f"changes/zone answered {status}: {reply}")
        result = reply["zones"][0]
        for record in result.get("records", []):
            (names.discard if record.get("deleted") else names.add)(record["recordName"])
        token = result["syncToken"]
        if not result.get("moreComing"):
            return names


# MARK: scenarios

def crash_batch(ctx):
    """kill -9 while an atomic 200-record batch is in flight; after restart the batch is all there or not at all,
    and a retry with the same Idempotency-Key applies it exactly once."""
    account = ctx.account("crash-batch")
    status, _, _ = account.call("zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Trips"}}}]})
    expect(status == 200, "zone create failed")
    outcomes = {"none": 0, "all": 0}
    rounds = 6
    for round_number in range(rounds):
        names = [f"r{round_number}-{i}" for i in range(200)]
        batch = {"zoneID": {"zoneName": "Trips"}, "atomic": True, "operations": [visit(n, 4000) for n in names]}
        key = str(uuid.uuid4())
        sender = threading.Thread(target=lambda: _swallow(lambda: account.call("records/modify", batch, {"Idempotency-Key": key})))
        sender.start()
        time.sleep(0.01 * 2 ** round_number)  # 10 ms to 320 ms: kills land before, during and after the commit
        ctx.server.kill9()
        sender.join()
        ctx.server.start()
        present = live_names(account, "Trips") & set(names)
        expect(len(present) in (0, 200), f"round {round_number}: a partial batch is visible ({len(present)} of 200)")
        outcomes["all" if present else "none"] += 1
        first = account.call("records/modify", batch, {"Idempotency-Key": key})
        again = account.call("records/modify", batch, {"Idempotency-Key": key})
        expect(first[0] == 200 and again[0] == 200, f"round {round_number}: retry answered {first[0]}, {again[0]}")
        expect(first[2] == again[2], f"round {round_number}: a second retry got a different answer")
        errors = [r for r in first[2]["records"] if "serverErrorCode" in r]
        expect(not errors, f"round {round_number}: the retry failed records: {errors[:2]}")
        expect(live_names(account, "Trips") >= set(names), f"round {round_number}: records missing after the retry")
    ctx.report("crash-batch", f"{rounds} kills during a 200-record atomic batch (~0.9 MB): {outcomes['none']} left nothing, "
                              f"{outcomes['all']} had committed; never partial; every retry with the key succeeded once "
                              f"and a second retry got the identical answer")


def _swallow(action):
    try:
        action()
    except OSError:
        pass


def crash_upload(ctx):
    """kill -9 during an upload; after restart the upload resumes from what reached disk and the record that
    references it downloads byte-identical."""
    account = ctx.account("crash-upload")
    payload = random.Random(7).randbytes(24 * 1024 * 1024)
    checksum = hashlib.sha256(payload).hexdigest()
    status, _, reply = account.call("assets/upload", {"tokens": [{"recordType": "VisitPhoto", "fieldName": "photo"}]})
    expect(status == 200, f"assets/upload answered {status}")
    url = urllib.parse.urlsplit(reply["tokens"][0]["url"])
    upload_path = f"{url.path}?{url.query}"

    upload_headers = {"Upload-Length": str(len(payload)), "X-StadiumCloud-Checksum": checksum}
    sender = threading.Thread(target=lambda: _swallow(lambda: slow_upload(ctx.server.port, upload_path, payload, 0.02, upload_headers)))
    sender.start()
    time.sleep(1.0)
    ctx.server.kill9()
    sender.join()
    ctx.server.start()
    status, headers, _ = request(ctx.server.port, "HEAD", upload_path)
    offset = int(headers.get("Upload-Offset", "0"))
    expect(status == 200 and 0 <= offset < len(payload), f"HEAD after the crash: {status}, offset {offset}")
    # Nothing can reference the asset yet: without a receipt a record naming the checksum is refused.
    status, _, early = account.call("records/modify", {"operations": [{"operationType": "create", "record": {
        "recordName": "early", "recordType": "VisitPhoto",
        "fields": {"photo": {"value": {"fileChecksum": checksum, "size": len(payload)}}}}}]})
    refused = early.get("serverErrorCode") if status != 200 else early["records"][0].get("serverErrorCode")
    expect(refused, "a record referenced a half-uploaded asset")
    status, _, body = request(ctx.server.port, "POST", upload_path, payload[offset:], {
        "Upload-Offset": str(offset), "Upload-Length": str(len(payload)), "X-StadiumCloud-Checksum": checksum})
    expect(status == 200, f"resuming the upload answered {status}: {body[:200]}")
    single = json.loads(body)["singleFile"]
    expect(single["fileChecksum"] == checksum and single["size"] == len(payload), "the resumed upload has the wrong checksum or size")
    status, _, saved = account.call("records/modify", {"operations": [{"operationType": "create", "record": {
        "recordName": "photo", "recordType": "VisitPhoto", "fields": {"photo": {"value": single}}}}]})
    expect(status == 200 and "serverErrorCode" not in saved["records"][0], f"saving the photo record failed: {saved}")
    download = urllib.parse.urlsplit(saved["records"][0]["fields"]["photo"]["value"]["downloadURL"].replace("${f}", "photo.jpg"))
    status, _, data = request(ctx.server.port, "GET", f"{download.path}?{download.query}")
    expect(status == 200 and hashlib.sha256(data).hexdigest() == checksum, "the downloaded photo differs from the upload")
    ctx.report("crash-upload", f"kill -9 after {offset / 2**20:.1f} of 24 MiB had reached disk; after restart HEAD answered that "
                               f"offset, a record naming the unfinished asset was refused ({refused}), the resumed upload verified the "
                               f"whole file's SHA-256 and the download was byte-identical")


def db_outage(ctx, seconds):
    """PostgreSQL crashes (immediate stop) and stays away `seconds` under a write load: the server stays up, answers
    every request meanwhile with 503 TRY_AGAIN_LATER and retryAfter (never a 500, never a hang), /ready says why,
    and within 2 s of PostgreSQL's return it serves again, whatever the outage's length; no acknowledged write is lost."""
    name = f"db-outage-{seconds}s"
    accounts = [ctx.account(f"{name}-{i}") for i in range(3)]
    acknowledged, statuses, lock = set(), {}, threading.Lock()
    first_success_after_restart = []
    stop = threading.Event()
    restarted_at = []

    def writer(account, index):
        sequence = 0
        while not stop.is_set():
            record = f"w{index}-{sequence}"
            key = str(uuid.uuid4())
            while not stop.is_set():  # retry the same write (same key) until it is acknowledged
                try:
                    status, _, reply = account.call("records/modify", {"operations": [visit(record)]}, {"Idempotency-Key": key}, timeout=15)
                except OSError:
                    status, reply = "connection error", None
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
                if status == 200 and "serverErrorCode" not in reply["records"][0]:
                    with lock:
                        acknowledged.add((index, record))
                        if restarted_at and not first_success_after_restart:
                            first_success_after_restart.append(time.time())
                    break
                if status == 503:
                    expect(reply.get("serverErrorCode") in ("TRY_AGAIN_LATER", "THROTTLED") and reply.get("retryAfter"), f"503 without retryAfter: {reply}")
                time.sleep(0.1)
            sequence += 1

    threads = [threading.Thread(target=lambda a=a, i=i: _record_failure(ctx, lambda: writer(a, i))) for i, a in enumerate(accounts)]
    for thread in threads:
        thread.start()
    time.sleep(2)
    before = len(acknowledged)
    crashed_at = time.time()
    ctx.postgres.crash()
    ready = []

    def ask_ready():  # in its own thread: /ready may take its 2 s deadline, and the outage length must stay exact
        status, _, body = request(ctx.server.port, "GET", "/ready", timeout=10)
        ready.append((status, json.loads(body or b"{}")))

    time.sleep(min(seconds, 3) * 0.5)
    asker = threading.Thread(target=ask_ready)
    asker.start()
    time.sleep(max(0.0, crashed_at + seconds - time.time()))
    ctx.postgres.start()
    asker.join()
    ready = ready[0] if ready else None
    restarted_at.append(time.time())
    deadline = time.time() + 30
    while time.time() < deadline and not first_success_after_restart:
        time.sleep(0.02)
    time.sleep(1)
    stop.set()
    for thread in threads:
        thread.join()
    expect(ctx.server.process.poll() is None, "the server died while the database was away")
    expect(first_success_after_restart, "no write succeeded within 30 s of the database coming back")
    recovery = first_success_after_restart[0] - restarted_at[0]
    expect(recovery <= 2.0, f"the server took {recovery:.1f} s to serve again after a {seconds} s outage (goal: 2 s)")
    names = [live_names(a) for a in accounts]
    missing = [(i, n) for i, n in acknowledged if n not in names[i]]
    expect(not missing, f"{len(missing)} acknowledged writes are gone: {missing[:5]}")
    server_errors = {s: c for s, c in statuses.items() if isinstance(s, int) and s >= 500 and s != 503}
    expect(not server_errors, f"answers other than 503 during the outage: {server_errors}")
    # An outage shorter than the 3 s database deadline may cut no request: one that had not yet taken a connection
    # waits for PostgreSQL's return and is served (a save holds one for two short round trips).
    expect(statuses.get(503) or seconds < 3, "no 503 TRY_AGAIN_LATER was seen while the database was away")
    expect("connection error" not in statuses, f"{statuses.get('connection error')} requests got no answer (timeout or reset)")
    # /ready waits up to 2 s for the database: asked half a second into a 1 s outage, it may see it come back.
    expect(ready and (ready[0] == 503 and ready[1].get("reason") or seconds < 3), f"/ready during the outage: {ready}")
    # /ready is public: it says that PostgreSQL is away, never the driver's error (host, port, errno).
    expect(not ready or not any(word in str(ready[1]) for word in ("127.0.0.1", "errno", "Connection")), f"/ready tells too much: {ready}")
    ctx.report(name, f"database down {restarted_at[0] - crashed_at:.1f} s: {len(acknowledged)} writes acknowledged ({before} before), "
                     f"all found after recovery; first write {recovery:.2f} s after it was back; answers seen: "
                     f"{dict(sorted(statuses.items(), key=str))}; /ready said {ready[1].get('reason') or ready[1].get('status')!r}")


# Outage lengths (seconds) the db-outage scenarios hold the database away: short, past PostgresNIO's 15 s circuit
# breaker, and past its one-minute connection backoff.
OUTAGES = [1, 30, 120]


class Nginx:
    """nginx from Debian's packages on loopback, round robin over server processes (deploy/nginx/stadiumcloud.conf)."""

    def __init__(self, ports):
        self.dir = tempfile.mkdtemp(prefix="stadiumcloud-nginx.")
        os.makedirs(os.path.join(self.dir, "tmp"))
        self.port = int(sh("free_port 22080"))
        with open(os.path.join(ROOT, "deploy", "nginx", "stadiumcloud.conf")) as template:
            config = template.read().replace("@LISTEN@", str(self.port)).replace(
                "@UPSTREAMS@", "\n        ".join(f"server 127.0.0.1:{p} max_fails=1 fail_timeout=2s;" for p in ports))
        with open(os.path.join(self.dir, "stadiumcloud.conf"), "w") as out:
            out.write(config)
        log = open(os.path.join(ROOT, ".stadiumcloud", "faults", "nginx.log"), "a")
        # Started as root, nginx's workers would run as nobody, who cannot enter this private folder (its cache is there).
        directives = "daemon off;" + (" user root;" if os.geteuid() == 0 else "")
        self.process = subprocess.Popen(["nginx", "-p", self.dir, "-c", "stadiumcloud.conf", "-g", directives], stdout=log, stderr=log)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                if request(self.port, "GET", "/health")[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise Failure("nginx did not answer in 10 s (see .stadiumcloud/faults/nginx.log)")

    def stop(self):
        self.process.terminate()
        self.process.wait()
        subprocess.run(["rm", "-rf", self.dir])


class Device:
    """The SDK's CLI (stadiumcloud-client) with a store of its own, signed in to a server or balancer."""

    def __init__(self, ctx, port):
        self.binary = os.path.join(os.path.dirname(ctx.server.binary), "stadiumcloud-client")
        self.store = tempfile.mktemp(prefix="stadiumcloud-device.", suffix=".sqlite")
        self.env = {**os.environ, "STADIUMCLOUD_PASSWORD": f"device-{uuid.uuid4().hex}", "STADIUMCLOUD_API_TOKEN": ctx.api_token}
        name = f"device-{uuid.uuid4().hex[:6]}"
        ctx.server.cli("accounts", "create", name, "--password-stdin", stdin=self.env["STADIUMCLOUD_PASSWORD"] + "\n")
        self.run("signin", name, "--server", f"http://127.0.0.1:{port}", "--container", CONTAINER)

    def run(self, *args):
        return subprocess.run([self.binary, *args, "--store", self.store], cwd=ROOT, check=True, text=True, capture_output=True,
                              env=self.env).stdout

    def sync(self):
        """(exit status, output) of one `sync`."""
        done = subprocess.run([self.binary, "sync", "--store", self.store], cwd=ROOT, text=True, capture_output=True, env=self.env)
        return done.returncode, done.stdout + done.stderr


def cluster(ctx):
    """Three server processes on one PostgreSQL behind nginx: under a write load through the balancer, one process is
    killed with -9 and another restarted (a rolling restart). Clients retry with their keys through nginx: no
    acknowledged write is lost, no batch is applied twice, no answer is a 500, and every client finishes."""
    extras, balancers = [], []
    try:
        _cluster(ctx, extras, balancers)
    finally:  # pass or fail, no process of this scenario outlives it
        for nginx in balancers:
            nginx.stop()
        for server in extras:
            if server.process and server.process.poll() is None:
                server.process.send_signal(signal.SIGTERM)
                server.process.wait(timeout=30)


def _cluster(ctx, extras, balancers):
    servers = [ctx.server]
    for _ in range(2):
        extra = Server(ctx.server.binary, ctx.server.database_url, ctx.server.assets)
        extras.append(extra)
        extra.start()
        servers.append(extra)
    nginx = Nginx([server.port for server in servers])
    balancers.append(nginx)
    balancer = type("Balancer", (), {"port": nginx.port, "cli": ctx.server.cli})()
    accounts = [Account(balancer, ctx.api_token, f"cluster-{i}-{uuid.uuid4().hex[:6]}") for i in range(4)]
    # A device (the SDK's CLI) signed in through the balancer, with 30 visits queued, syncs during the restarts.
    device = Device(ctx, nginx.port)
    for n in range(30):
        device.run("visits", "add", "stadium_mlb_oracle_park", "--date", f"2024-05-{1 + n % 28:02d}", "--notes", f"cluster {n}")
    device_result = []
    acknowledged, statuses, twice, lock = set(), {}, [], threading.Lock()
    stop = threading.Event()

    def writer(account, index):
        sequence = 0
        while not stop.is_set():
            names = [f"c{index}-{sequence}-{n}" for n in range(5)]
            key = str(uuid.uuid4())
            while True:  # the same batch with the same key until acknowledged, even after stop
                try:
                    status, _, reply = account.call("records/modify", {"operations": [visit(n) for n in names]}, {"Idempotency-Key": key}, timeout=15)
                except OSError:
                    status, reply = "connection error", None
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
                if status == 200:
                    codes = [r.get("serverErrorCode") for r in reply["records"]]
                    with lock:
                        if "EXISTS" in codes:
                            twice.append(names)  # a retry applied again instead of answered from its key
                        acknowledged.update((index, n) for n in names)
                    break
                time.sleep(0.1)
            sequence += 1

    threads = [threading.Thread(target=lambda a=a, i=i: _record_failure(ctx, lambda: writer(a, i))) for i, a in enumerate(accounts)]
    for thread in threads:
        thread.start()
    syncing = threading.Thread(target=lambda: device_result.append(device.sync()))
    try:
        time.sleep(2)
        syncing.start()
        servers[1].kill9()
        time.sleep(1)
        servers[2].process.send_signal(signal.SIGTERM)  # rolling restart: one process at a time
        servers[2].process.wait(timeout=30)
        servers[2].start()
        servers[1].start()
        time.sleep(2)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        if syncing.ident:  # started
            syncing.join(timeout=120)
    expect(not any(thread.is_alive() for thread in threads), "a client did not finish within 60 s")
    # The SDK retries what the restarts cut; a sync that ran into a dead process ends with edits still queued, and
    # the next one sends them.
    expect(device_result, "the device's sync did not finish")
    final = device.sync()
    expect(final[0] == 0, f"the device's sync after the restarts failed: {final[1][-300:]}")
    synced = device.run("visits", "list")
    expect("not synced" not in synced, f"the device's visits did not all reach the server: {synced[-300:]}")
    names = [live_names(a) for a in accounts]
    missing = [(i, n) for i, n in acknowledged if n not in names[i]]
    expect(not missing, f"{len(missing)} acknowledged writes are gone: {missing[:5]}")
    expect(not twice, f"{len(twice)} batches were applied twice: {twice[:3]}")
    server_errors = {s: c for s, c in statuses.items() if isinstance(s, int) and s >= 500 and s not in (502, 503)}
    expect(not server_errors, f"5xx other than 502/503 through the balancer: {server_errors}")
    ctx.report("cluster", f"3 processes behind nginx, one killed with -9 and one restarted under load: {len(acknowledged)} records "
                          f"acknowledged in batches of 5, all found, none applied twice; answers seen: {dict(sorted(statuses.items(), key=str))}; "
                          f"the device's sync during the restarts exited {device_result[0][0]}, and its 30 visits all reached the server")


def _record_failure(ctx, action):
    try:
        action()
    except Exception as error:  # noqa: BLE001 - a thread's failure is reported by the main thread
        ctx.failures.append(f"{type(error).__name__}: {error}")


def sigterm(ctx):
    """SIGTERM while an upload is streaming: the request completes, then the server exits 0."""
    account = ctx.account("sigterm")
    payload = random.Random(9).randbytes(8 * 1024 * 1024)
    status, _, reply = account.call("assets/upload", {"tokens": [{"recordType": "VisitPhoto", "fieldName": "photo"}]})
    url = urllib.parse.urlsplit(reply["tokens"][0]["url"])
    result = {}

    def upload():
        result["status"], result["body"] = slow_upload(ctx.server.port, f"{url.path}?{url.query}", payload, 0.05)

    sender = threading.Thread(target=lambda: _record_failure(ctx, upload))
    sender.start()
    time.sleep(0.5)
    signalled = time.time()
    ctx.server.process.send_signal(signal.SIGTERM)
    sender.join()
    code = ctx.server.process.wait(timeout=30)
    exited = time.time() - signalled
    expect(result.get("status") == 200, f"the in-flight upload got {result.get('status')} after SIGTERM")
    expect(json.loads(result["body"])["singleFile"]["size"] == len(payload), "the in-flight upload was cut short")
    expect(code == 0, f"the server exited with {code} after SIGTERM")
    ctx.server.start()
    ctx.report("sigterm", f"SIGTERM 0.5 s into a 1.6 s upload: the upload finished (200, all 8 MiB), the server exited 0 "
                          f"{exited:.1f} s after the signal")


def load(ctx, seconds):
    """Several accounts pushing, pulling, polling and uploading for `seconds`: no 5xx, memory flat, latencies."""
    accounts = [ctx.account(f"load-{i}") for i in range(4)]
    latencies, statuses, lock = {}, {}, threading.Lock()
    stop = threading.Event()
    rss = []

    def timed(kind, action):
        started = time.time()
        status = action()
        with lock:
            latencies.setdefault(kind, []).append((time.time() - started) * 1000)
            statuses[status] = statuses.get(status, 0) + 1

    def pusher(account, index):
        sequence = 0
        while not stop.is_set():
            ops = [visit(f"p{index}-{sequence}-{i}", 200) for i in range(50)]
            timed("push 50", lambda: account.call("records/modify", {"operations": ops}, {"Idempotency-Key": str(uuid.uuid4())})[0])
            sequence += 1

    def puller(account):
        while not stop.is_set():
            timed("pull from start", lambda: account.call("changes/zone", {"zones": [{"zoneID": {"zoneName": "_defaultZone"}, "resultsLimit": 200}]})[0])

    def poller(account):
        token = [None]

        def one():
            entry = {"zoneID": {"zoneName": "_defaultZone"}}
            if token[0]:
                entry["syncToken"] = token[0]
            status, _, reply = account.call("changes/zone", {"zones": [entry]})
            if status == 200:
                token[0] = reply["zones"][0].get("syncToken", token[0])
            return status
        while not stop.is_set():
            timed("poll", one)

    def uploader(account):
        payload = random.Random(3).randbytes(512 * 1024)
        while not stop.is_set():
            def one():
                status, _, reply = account.call("assets/upload", {"tokens": [{"recordType": "VisitPhoto", "fieldName": "photo"}]})
                if status != 200:
                    return status
                url = urllib.parse.urlsplit(reply["tokens"][0]["url"])
                return request(ctx.server.port, "POST", f"{url.path}?{url.query}", payload)[0]
            timed("upload 512 KiB", one)

    workers = []
    for i, account in enumerate(accounts):
        workers.append(threading.Thread(target=lambda a=account, i=i: _record_failure(ctx, lambda: pusher(a, i))))
        workers.append(threading.Thread(target=lambda a=account: _record_failure(ctx, lambda: poller(a))))
    workers.append(threading.Thread(target=lambda: _record_failure(ctx, lambda: puller(accounts[0]))))
    workers.append(threading.Thread(target=lambda: _record_failure(ctx, lambda: uploader(accounts[1]))))
    for worker in workers:
        worker.start()
    end = time.time() + seconds
    while time.time() < end:
        rss.append(ctx.server.rss_kib())
        time.sleep(1)
    stop.set()
    for worker in workers:
        worker.join()
    total = sum(statuses.values())
    server_errors = sum(c for s, c in statuses.items() if s >= 500)
    expect(server_errors == 0, f"{server_errors} answers were 5xx: {statuses}")
    warm = rss[len(rss) // 4:] or rss
    growth = (max(warm[-3:]) - min(warm[:3])) / 1024
    # Flat: after warm-up the resident size may wobble, but must not climb steadily.
    expect(growth < 64, f"memory grew {growth:.0f} MiB after warm-up: {rss[::max(1, len(rss) // 10)]}")
    summary = "; ".join(
        f"{kind}: {len(values)} × p50 {statistics.median(values):.0f} ms p99 {sorted(values)[int(len(values) * 0.99) - 1]:.0f} ms"
        for kind, values in sorted(latencies.items()))
    samples = " ".join(f"{value / 1024:.0f}" for value in rss[::max(1, len(rss) // 10)])
    ctx.report("load", f"{seconds} s, 4 accounts, {total} requests ({total / seconds:.0f}/s), 0 5xx; RSS {min(rss) / 1024:.0f}–"
                       f"{max(rss) / 1024:.0f} MiB (every tenth: {samples}), {growth:+.0f} MiB from warm-up to end; {summary}")


class Context:
    def __init__(self, server, postgres, api_token, quick=False):
        self.server, self.postgres, self.api_token, self.quick = server, postgres, api_token, quick
        self.failures, self.lines = [], []

    def account(self, name):
        return Account(self.server, self.api_token, f"{name}-{uuid.uuid4().hex[:6]}")

    def report(self, scenario, line):
        self.lines.append(f"- **{scenario}**: {line}")
        print(f"faults: {scenario}: {line}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the CI set: a 20-second load")
    parser.add_argument("--load-seconds", type=int, default=180)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    # SIGTERM (scripts/test ending early) unwinds like an error, so every `finally` stops what it started.
    signal.signal(signal.SIGTERM, interrupt)
    interrupted = False
    load_seconds = 20 if args.quick else args.load_seconds
    os.makedirs(os.path.join(ROOT, ".stadiumcloud", "faults"), exist_ok=True)

    postgres = Postgres()
    postgres.start()
    assets = tempfile.mkdtemp(prefix="stadiumcloud-faults-assets.")
    server = Server(args.binary, postgres.url, assets)
    try:
        server.cli("migrate", "up")
        server.cli("schema", "apply", "Resources/schema.json")
        api_token = server.cli("tokens", "create", "--label", "faults").strip()
        server.start()
        ctx = Context(server, postgres, api_token, quick=args.quick)
        import cache  # noqa: E402 - beside this file; they use its helpers (as the module `run`)
        import history  # noqa: E402
        import resources  # noqa: E402
        scenarios = {"crash-batch": crash_batch, "crash-upload": crash_upload,
                     **{f"db-outage-{n}s": (lambda c, n=n: db_outage(c, n)) for n in OUTAGES},
                     "cluster": cluster, "sigterm": sigterm, "load": lambda c: load(c, load_seconds),
                     **history.SCENARIOS, **resources.SCENARIOS, **cache.SCENARIOS}
        unknown = set(args.only or []) - set(scenarios)
        expect(not unknown, f"no scenario is called {', '.join(sorted(unknown))}; there are: {', '.join(scenarios)}")
        for name, scenario in scenarios.items():
            if args.only and name not in args.only:
                continue
            started = time.time()
            scenario(ctx)
            expect(not ctx.failures, f"{name}: {ctx.failures}")
            print(f"faults: {name} passed in {time.time() - started:.1f} s", flush=True)
        with open(os.path.join(ROOT, ".stadiumcloud", "faults", "last-run.md"), "w") as out:
            out.write(f"Fault scenarios, {time.strftime('%Y-%m-%d %H:%M')} UTC, binary {os.path.relpath(args.binary, ROOT)}\n\n")
            out.write("\n".join(ctx.lines) + "\n")
        print("faults: all scenarios passed (figures in .stadiumcloud/faults/last-run.md)")
    except Failure as failure:
        print(f"faults: FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
    except Interrupted:
        print("faults: interrupted", file=sys.stderr)
        interrupted = True
    finally:
        if server.process and server.process.poll() is None:
            server.process.send_signal(signal.SIGTERM)
            try:
                server.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill9()
        postgres.stop()
        subprocess.run(["rm", "-rf", assets])
    if interrupted:
        # The interrupted scenario's worker threads would keep the interpreter alive; everything is stopped by now.
        os._exit(143)


if __name__ == "__main__":
    main()
