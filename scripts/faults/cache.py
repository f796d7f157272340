"""The cache scenario (docs/SCALING.md, "Caches in front"): nginx's proxy cache in front of a server whose public
reads are cacheable. Simulated devices, all started from one snapshot position, poll through the cache while an
operator imports changes and a live game updates scores (writes go on during each round): each device is told the
new version (as a push would), asks `versions?_expected=…`, then the ranges of changes from its own position, checks
every answer's signature (once per distinct body: the bytes are what is trusted) and applies it. Some devices sit out
some rounds, so their positions differ. At the end every device must hold exactly the origin's state, and the origin
must have served at most 1 % of the device requests. CACHE_DEVICES (10,000) and CACHE_ROUNDS (3) size it."""
import base64
import hashlib
import json
import os
import random
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import types

from run import CONTAINER, Failure, Nginx, Server, expect, request, sh  # noqa: F401
from history import Operator

PUBLIC = f"/public/1/{CONTAINER}/development"
ZONE = "_defaultZone"


class Client:
    """One keep-alive connection per thread to nginx, spoken plainly (http.client would be the load's bottleneck)."""

    def __init__(self, port):
        self.port, self.local = port, threading.local()

    def get(self, path):
        for attempt in range(3):
            try:
                return self._get(path)
            except OSError:
                connection = getattr(self.local, "socket", None)
                if connection:
                    connection.close()
                self.local.socket = None
                if attempt == 2:
                    raise

    def _get(self, path):
        connection = getattr(self.local, "socket", None)
        if connection is None:
            connection = self.local.socket = socket.create_connection(("127.0.0.1", self.port), timeout=30)
            self.local.buffer = b""
        started = time.perf_counter()
        connection.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        buffer = self.local.buffer
        while b"\r\n\r\n" not in buffer:
            buffer += self._receive(connection)
        head, buffer = buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
        expect("content-length" in headers, f"an answer through the cache has no Content-Length: {headers}")
        length = int(headers["content-length"])
        while len(buffer) < length:
            buffer += self._receive(connection)
        body, self.local.buffer = buffer[:length], buffer[length:]
        return status, headers.get("x-cache-status", ""), headers.get("x-stadiumcloud-signature"), body, time.perf_counter() - started

    @staticmethod
    def _receive(connection):
        data = connection.recv(65536)
        if not data:
            raise ConnectionError("nginx closed the connection")
        return data


class Verifier:
    """Checks signatures with openssl and parses the JSON, once per distinct (body, signature): the same bytes from
    the cache are the same answer."""

    def __init__(self, public_key_path, key_id):
        self.path, self.key_id, self.seen, self.lock = public_key_path, key_id, {}, threading.Lock()

    def check(self, body, header):
        """The answer's JSON, once its signature is checked."""
        expect(header is not None, "an answer through the cache has no signature")
        key_id, signature = header.split(" ", 1)
        expect(key_id == self.key_id, f"an answer is signed with key {key_id}, not {self.key_id}")
        digest = hashlib.sha256(body + signature.encode()).hexdigest()
        with self.lock:
            if digest in self.seen:
                return self.seen[digest]
        with tempfile.NamedTemporaryFile() as sig, tempfile.NamedTemporaryFile() as data:
            sig.write(base64.b64decode(signature)); sig.flush()
            data.write(body); data.flush()
            done = subprocess.run(["openssl", "dgst", "-sha256", "-verify", self.path, "-signature", sig.name, data.name], capture_output=True)
        expect(done.returncode == 0, f"an answer's signature does not verify: {done.stdout!r} {done.stderr!r}")
        parsed = json.loads(body)
        with self.lock:
            self.seen[digest] = parsed
        return parsed


def cache(ctx):
    devices_count = int(os.environ.get("CACHE_DEVICES", "10000"))
    rounds = int(os.environ.get("CACHE_ROUNDS", "3"))
    work = tempfile.mkdtemp(prefix="stadiumcloud-cache.")
    key = os.path.join(work, "snapshot-key.pem")
    printed = ctx.server.cli("snapshot", "keygen", "--out", key)
    public_key = os.path.join(work, "snapshot-key.pub")
    with open(public_key, "w") as out:
        out.write(printed.split("key id:")[0])
    key_id = printed.split("key id:")[1].strip()
    server = Server(ctx.server.binary, ctx.postgres.url, ctx.server.assets, port_from=23080,
                    extra=["--snapshot-key", key], log="cache-server.log")
    nginx = None
    stop = threading.Event()
    try:
        server.start()
        nginx = Nginx([server.port])
        world = types.SimpleNamespace(dir=work, server=server, port=server.port, count=lambda *args: None)
        operator = Operator(world)
        imported = [f"cache-venue-{i}" for i in range(40)]
        scores = [f"cache-score-{i}" for i in range(5)]
        operator.write(imported + scores, "season start")

        def origin_versions():
            status, _, body = request(server.port, "GET", f"{PUBLIC}/versions")
            expect(status == 200, f"versions answered {status}: {body[:200]}")
            answer = json.loads(body)
            zone = next(z for z in answer["zones"] if z["zoneName"] == ZONE)
            return zone["head"], answer["history"]

        start, history = origin_versions()  # the snapshot every device ships with
        devices = [{"position": start, "state": {}} for _ in range(devices_count)]
        client = Client(nginx.port)
        verifier = Verifier(public_key, key_id)
        statuses, latencies, counts = {}, [], {"device": 0, "origin": 0}
        lock = threading.Lock()
        rng = random.Random(20261126)

        def live_scores():
            # A live game: a score every 20 ms while devices poll.
            n = 0
            while not stop.is_set():
                operator.write([scores[n % len(scores)]], f"score {n}")
                n += 1
                stop.wait(0.02)

        def poll(device, told):
            def get(path):
                status, cache_status, signature, body, seconds = client.get(path)
                with lock:
                    counts["device"] += 1
                    statuses[cache_status or "none"] = statuses.get(cache_status or "none", 0) + 1
                    if cache_status not in ("HIT", "STALE", "UPDATING"):
                        counts["origin"] += 1
                    latencies.append(seconds)
                expect(status == 200, f"{path} answered {status} through the cache: {body[:200]}")
                return verifier.check(body, signature)
            versions = get(f"{PUBLIC}/versions?_expected={told}")
            head = next(z for z in versions["zones"] if z["zoneName"] == ZONE)["head"]
            expect(versions["history"] == history, "the database's history changed under the scenario")
            while device["position"] < head:
                answer = get(f"{PUBLIC}/changes/{ZONE}?from={device['position']}&to={head}&history={history}")
                for record in answer["records"]:
                    device["state"][record["recordName"]] = None if record.get("deleted") else record["recordChangeTag"]
                device["position"] = answer["end"]

        def run_round(online, told):
            chunks = [online[i::8] for i in range(8)]
            errors = []

            def worker(chunk):
                try:
                    for device in chunk:
                        poll(device, told)
                except Exception as error:  # noqa: BLE001 - reported below
                    errors.append(error)
            threads = [threading.Thread(target=worker, args=(chunk,)) for chunk in chunks]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if errors:
                raise errors[0] if isinstance(errors[0], Failure) else Failure(f"a device failed: {errors[0]!r}")

        cpu_before = _cpu_seconds(server.process.pid)
        started = time.time()
        for number in range(rounds):
            # An import between rounds, scores during them.
            operator.write(rng.sample(imported, 10), f"import {number}")
            scorer = threading.Thread(target=live_scores)
            stop.clear()
            scorer.start()
            try:
                told, _ = origin_versions()
                run_round([d for d in devices if rng.random() < 0.8], told)
            finally:
                stop.set()
                scorer.join()
        told, _ = origin_versions()
        run_round(devices, told)  # everyone, after the last write
        elapsed = time.time() - started
        cpu = _cpu_seconds(server.process.pid) - cpu_before

        # The origin's state of every record changed since the snapshot, read directly.
        truth, position = {}, start
        while position < told:
            status, _, body = request(server.port, "GET", f"{PUBLIC}/changes/{ZONE}?from={position}&to={told}&history={history}")
            expect(status == 200, f"the origin's range answered {status}")
            answer = json.loads(body)
            for record in answer["records"]:
                truth[record["recordName"]] = None if record.get("deleted") else record["recordChangeTag"]
            position = answer["end"]
        diverged = sum(1 for device in devices if device["state"] != truth or device["position"] != told)
        expect(diverged == 0, f"{diverged} of {devices_count} devices did not converge to the origin's state")
        share = counts["origin"] / counts["device"]
        expect(share <= 0.01, f"the origin served {counts['origin']} of {counts['device']} device requests ({share:.2%}); at most 1 %")
        latencies.sort()
        p99 = latencies[int(len(latencies) * 0.99)] * 1000
        ctx.report(
            "cache",
            f"{devices_count} devices, {rounds} rounds of polls through nginx's cache while an operator imported and a live game "
            f"scored: all converged to the origin's {len(truth)} changed records, none skipped; origin served {counts['origin']} of "
            f"{counts['device']} device requests ({share:.3%}: {counts['origin'] / counts['device'] * 1000:.1f} per 1,000), server CPU "
            f"{cpu / counts['device'] * 1000 * 1000:.0f} ms per 1,000 device requests (its writes included); p99 {p99:.1f} ms, "
            f"p50 {statistics.median(latencies) * 1000:.2f} ms through the cache; cache statuses {statuses}; {elapsed:.1f} s")
    finally:
        stop.set()
        if nginx:
            nginx.stop()
        if server.process and server.process.poll() is None:
            server.process.terminate()
            server.process.wait()
        subprocess.run(["rm", "-rf", work])


def _cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


SCENARIOS = {"cache": cache}
