"""Resources running out (docs/RELIABILITY.md, "Resources"): the asset store's filesystem fills up (disk-full), clients
that open connections and send nothing (slow-clients), long polls whose clients went away (waiters). Each runs a
server process of its own (its own serve options and log) on the harness's PostgreSQL.
"""
import errno
import hashlib
import http.client
import json
import os
import random
import resource
import select
import signal
import socket
import statistics
import struct
import subprocess
import tempfile
import threading
import time
import urllib.parse
import uuid

from run import BASE, ROOT, Account, Failure, Server, expect, request

from history import Checks


def own_server(ctx, name, extra=(), assets=None, limits=None):
    """A server process of the scenario's own on the harness's database, with `extra` serve options (not started)."""
    log = f"{name}.log"
    open(os.path.join(ROOT, ".stadiumcloud", "faults", log), "w").close()  # this run's lines only
    server = Server(ctx.server.binary, ctx.postgres.url, assets or tempfile.mkdtemp(prefix="stadiumcloud-faults-assets."),
                    port_from=24080, extra=extra, log=log, limits=limits)
    server.own_assets = assets is None  # stop() removes a folder made here
    return server


def start(server):
    """Starts a scenario's server; when it exits instead, the failure quotes the end of its log (an unknown option)."""
    try:
        server.start()
    except Failure as failure:
        with open(server.log_path, errors="replace") as log:
            tail = " | ".join(line.strip() for line in log.read().splitlines()[-4:])
        raise Failure(f"{failure}: {tail}") from None


def stop(server):
    if server and server.process and server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill9()
    if server and server.own_assets:
        subprocess.run(["rm", "-rf", server.assets])


def metric(port, name):
    """The value of a Prometheus sample (the first, if it has labels), or None when the server does not export it."""
    status, _, body = request(port, "GET", "/metrics", timeout=10)
    expect(status == 200, f"/metrics answered {status}")
    for line in body.decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 2 and (parts[0] == name or parts[0].startswith(name + "{")):
            return float(parts[1])
    return None


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else float("nan")


def error_of(status, headers, body):
    """`status serverErrorCode (reason)` of an answer, for messages."""
    try:
        reply = json.loads(body)
    except ValueError:
        return f"{status} {body[:120]!r}"
    return f"{status} {reply.get('serverErrorCode')} ({str(reply.get('reason'))[:140]})"


# MARK: disk-full

def upload_url(account):
    status, _, reply = account.call("assets/upload", {"tokens": [{"recordType": "VisitPhoto", "fieldName": "photo"}]})
    expect(status == 200, f"assets/upload answered {status}: {reply}")
    url = urllib.parse.urlsplit(reply["tokens"][0]["url"])
    return f"{url.path}?{url.query}", url.path.rsplit("/", 1)[-1]


def post_streamed(port, path, payload, headers, piece=1 << 20):
    """POSTs `payload` in pieces; the server may answer (and close) before it has read all of it. Returns (status,
    headers, body), or ("connection error", {}, reason) when no answer could be read."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.putrequest("POST", path)
        for name, value in {"Content-Length": str(len(payload)), **headers}.items():
            connection.putheader(name, value)
        connection.endheaders()
        try:
            for start in range(0, len(payload), piece):
                connection.send(payload[start:start + piece])
        except OSError:
            pass  # answered early: read what the server said
        try:
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        except (OSError, http.client.HTTPException) as error:
            return "connection error", {}, repr(error).encode()
    finally:
        connection.close()


def fill(folder):
    """Writes a filler file until the filesystem is full (ENOSPC); its path and size."""
    path = os.path.join(folder, "filler")
    block = b"\xa5" * (1 << 20)
    written = 0
    with open(path, "wb", buffering=0) as out:
        while True:
            try:
                written += out.write(block)
            except OSError as error:
                expect(error.errno == errno.ENOSPC, f"filling the asset folder failed: {error}")
                break
    for size in (1 << 16, 4096, 1):  # the last bytes of room too
        with open(path, "ab", buffering=0) as out:
            try:
                while True:
                    written += out.write(block[:size])
            except OSError:
                pass
    return path, written


def disk_full(ctx):
    """The asset folder on a 40 MB tmpfs: an upload that fills it, then a filesystem already full, then room again."""
    check = Checks("disk-full")
    folder = tempfile.mkdtemp(prefix="stadiumcloud-faults-full.")
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", folder], capture_output=True, text=True)
    if mount.returncode != 0:
        os.rmdir(folder)
        raise Failure(f"disk-full needs a small filesystem: `mount -t tmpfs -o size=40m tmpfs {folder}` failed "
                      f"({mount.returncode}: {mount.stderr.strip()}); run the fault scenarios as root (or with CAP_SYS_ADMIN)")
    server = None
    try:
        server = own_server(ctx, "disk-full", assets=folder)
        start(server)
        _disk_full(ctx, server, folder, check)
    finally:
        stop(server)
        if subprocess.run(["umount", folder], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", folder], capture_output=True)
        os.rmdir(folder)
    check.finish()


def _disk_full(ctx, server, folder, check):
    started = time.time()
    owner = Account(server, ctx.api_token, f"full-owner-{uuid.uuid4().hex[:6]}")
    other = Account(server, ctx.api_token, f"full-other-{uuid.uuid4().hex[:6]}")
    statuses, leftovers = [], []

    def upload(account, payload, headers=None, resumable_pieces=0):
        """One upload; with `resumable_pieces`, as that many POSTs with Upload-Length and Upload-Offset. Returns the
        last answer (status, headers, body) and the upload id."""
        path, upload_id = upload_url(account)
        if not resumable_pieces:
            answer = post_streamed(server.port, path, payload, headers or {})
            statuses.append(answer[0])
            return answer, upload_id
        piece = -(-len(payload) // resumable_pieces)
        for offset in range(0, len(payload), piece):
            answer = post_streamed(server.port, path, payload[offset:offset + piece], {
                "Upload-Length": str(len(payload)), "Upload-Offset": str(offset), **(headers or {})})
            statuses.append(answer[0])
            if answer[0] != 200:
                break
        return answer, upload_id

    def save_photo(account, name, single):
        status, _, saved = account.call("records/modify", {"operations": [{"operationType": "create", "record": {
            "recordName": name, "recordType": "VisitPhoto", "fields": {"photo": {"value": single}}}}]})
        expect(status == 200 and "serverErrorCode" not in saved["records"][0], f"saving {name} failed: {saved}")
        download = urllib.parse.urlsplit(saved["records"][0]["fields"]["photo"]["value"]["downloadURL"].replace("${f}", "photo.jpg"))
        return f"{download.path}?{download.query}"

    def try_again_later(label, answer):
        status, headers, body = answer
        try:
            reply = json.loads(body)
        except (ValueError, TypeError):
            reply = {}
        header = {k.lower(): v for k, v in headers.items()}.get("retry-after")
        return check(f"{label} answers 503 TRY_AGAIN_LATER with retryAfter and Retry-After",
                     status == 503 and reply.get("serverErrorCode") == "TRY_AGAIN_LATER" and isinstance(reply.get("retryAfter"), (int, float))
                     and header is not None, f"{error_of(status, headers, body)}, retryAfter {reply.get('retryAfter')}, Retry-After {header}")

    # Something stored before, to read back while the store is full and after.
    before = random.Random(1).randbytes(1 << 20)
    answer, _ = upload(other, before)
    expect(answer[0] == 200, f"the first 1 MB upload answered {error_of(*answer)}")
    before_url = save_photo(other, "stored-before", json.loads(answer[2])["singleFile"])

    # (a) An upload larger than the room left, raw and resumable.
    big = random.Random(2).randbytes(60 * 1000 * 1000)
    for label, pieces in (("a 60 MB raw upload", 0), ("a 60 MB resumable upload in 8 pieces", 8)):
        answer, upload_id = upload(owner, big, resumable_pieces=pieces)
        try_again_later(f"{label} past the free space", answer)
        partial = os.listdir(os.path.join(folder, "partial"))
        if not check(f"{label}: its partial file is dropped", upload_id not in partial, f"partial/ holds {partial}"):
            leftovers.append(upload_id)
            os.remove(os.path.join(folder, "partial", upload_id))  # so that the steps below test their own promises
    small = random.Random(3).randbytes(1 << 20)
    answer, _ = upload(other, small)
    check("another account's 1 MB upload then succeeds", answer[0] == 200, error_of(*answer))

    # (b) The filesystem full: uploads are refused, /ready and /metrics say so, reads work.
    filler, filled = fill(folder)
    answer, upload_id = upload(other, random.Random(4).randbytes(1 << 20))
    try_again_later("a 1 MB upload to a full filesystem", answer)
    if os.path.exists(os.path.join(folder, "partial", upload_id)):
        leftovers.append(upload_id)
        os.remove(os.path.join(folder, "partial", upload_id))
    status, _, body = request(server.port, "GET", "/ready")
    ready = json.loads(body or b"{}") if status in (200, 503) else {}
    check("/ready answers 200 and says the asset store is full", status == 200 and ready.get("assetStore") == "full", f"{status} {ready}")
    gauge = metric(server.port, "stadiumcloud_asset_store_full")
    check("/metrics has stadiumcloud_asset_store_full 1", gauge == 1, f"{gauge}")
    status, _, found = other.call("records/lookup", {"records": [{"recordName": "stored-before"}]})
    check("a record fetch works while the store is full", status == 200 and "serverErrorCode" not in found["records"][0], f"{status} {str(found)[:200]}")
    status, _, data = request(server.port, "GET", before_url)
    check("an asset stored before downloads while the store is full", status == 200 and data == before, f"{status}, {len(data)} bytes")

    # (c) Room again.
    os.remove(filler)
    answer, _ = upload(other, random.Random(5).randbytes(1 << 20))
    check("with room again an upload succeeds", answer[0] == 200, error_of(*answer))
    status, _, body = request(server.port, "GET", "/ready")
    ready = json.loads(body or b"{}")
    check("/ready no longer says full", status == 200 and ready.get("assetStore") != "full", f"{status} {ready}")
    gauge = metric(server.port, "stadiumcloud_asset_store_full")
    check("the gauge is back to 0", gauge == 0, f"{gauge}")
    status, _, data = request(server.port, "GET", before_url)
    check("nothing stored before is lost", status == 200 and hashlib.sha256(data).digest() == hashlib.sha256(before).digest(), f"{status}, {len(data)} bytes")
    server_errors = [s for s in statuses if not isinstance(s, int) or s >= 500 and s != 503]
    check("no upload answer is a 5xx other than 503, or no answer", not server_errors, str(server_errors))
    ctx.report("disk-full", f"asset folder on a 40 MB tmpfs: upload answers {statuses}; filler {filled / 2**20:.1f} MiB; "
                            f"{len(leftovers)} partial files the server left removed by the scenario; "
                            f"{len(check.passed)} promises held, {len(check.failed)} broken; {time.time() - started:.0f} s")


# MARK: slow-clients

class Stalled:
    """Connections that send half a request head and then nothing, opened without blocking (a server that does not
    accept them leaves them in the kernel's backlog). `reap` notices the ones the server closed."""

    HEAD = f"POST {BASE}/private/records/lookup?ckAPIToken=x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty".encode()

    def __init__(self, port, source=None):
        self.port, self.source = port, source
        self.open_at, self.sockets = {}, {}
        self.poller = select.poll()
        self.lifetimes, self.answered, self.refused = [], 0, 0
        self.statuses = {}  # the status of each answer the server gave before closing: count

    def open(self, count, within=10.0):
        """Opens `count` connections, each sending half a head once connected; how many connected within `within` s."""
        pending = {}
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            if self.source:
                sock.bind((self.source, 0))
            code = sock.connect_ex(("127.0.0.1", self.port))
            if code not in (0, errno.EINPROGRESS):
                sock.close()
                self.refused += 1
                continue
            pending[sock.fileno()] = sock
        waiting = select.poll()
        for fd in pending:
            waiting.register(fd, select.POLLOUT)
        deadline, connected = time.time() + within, 0
        while pending and time.time() < deadline:
            for fd, _ in waiting.poll(100):
                sock = pending.pop(fd)
                waiting.unregister(fd)
                if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    sock.close()
                    self.refused += 1
                    continue
                try:
                    sock.send(self.HEAD)
                except OSError:
                    sock.close()
                    self.refused += 1
                    continue
                self.sockets[fd], self.open_at[fd] = sock, time.time()
                self.poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
                connected += 1
        for sock in pending.values():  # never connected
            sock.close()
            self.refused += 1
        return connected

    def reap(self):
        """Closes on our side what the server closed; records how long each lived after its last byte."""
        closed = 0
        for fd, _ in self.poller.poll(0):
            sock = self.sockets[fd]
            try:
                data = sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data:
                self.answered += 1  # the server said something (a 408?) before closing
                if data.startswith(b"HTTP/1.1 "):
                    status = int(data.split()[1])
                    self.statuses[status] = self.statuses.get(status, 0) + 1
                continue
            self.lifetimes.append(time.time() - self.open_at.pop(fd))
            self.poller.unregister(fd)
            del self.sockets[fd]
            sock.close()
            closed += 1
        return closed

    def close_all(self):
        for fd, sock in list(self.sockets.items()):
            self.poller.unregister(fd)
            sock.close()
        self.sockets.clear()


def descriptors(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def open_file_limits(pid):
    with open(f"/proc/{pid}/limits") as limits:
        for line in limits:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return int(soft), int(hard)
    return 0, 0


def workload_beside(server, accounts, seconds, step):
    """`workload` while `step` runs every 0.2 s in a thread of its own (the slow clients kept up); its figures."""
    stop = threading.Event()

    def keep():
        while not stop.is_set():
            step()
            time.sleep(0.2)

    keeper = threading.Thread(target=keep, daemon=True)
    keeper.start()
    try:
        return workload(server, accounts, seconds)
    finally:
        stop.set()
        keeper.join(timeout=30)


def workload(server, accounts, seconds):
    """Each account saves a record and fetches it back, on a new connection each time, for `seconds`: (latencies in ms,
    failures)."""
    latencies, failures, lock = [], [], threading.Lock()
    end = time.time() + seconds

    def worker(account, index):
        sequence = 0
        while time.time() < end:
            name = f"slow-{index}-{sequence}"
            for operation, body in (("records/modify", {"operations": [{"operationType": "forceUpdate", "record": {
                    "recordName": name, "recordType": "FaultNote", "fields": {"notes": {"value": name}}}}]}),
                                    ("records/lookup", {"records": [{"recordName": name}]})):
                began = time.time()
                try:
                    status, _, reply = account.call(operation, body, timeout=10)
                    problem = None if status == 200 and "serverErrorCode" not in reply["records"][0] else f"{operation}: {status} {str(reply)[:120]}"
                except OSError as error:
                    problem = f"{operation}: {error!r}"
                with lock:
                    latencies.append((time.time() - began) * 1000)
                    if problem:
                        failures.append(problem)
            sequence += 1

    threads = [threading.Thread(target=worker, args=(account, i), daemon=True) for i, account in enumerate(accounts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 30)
    return latencies, failures


def raw_answer(port, send_after=1.0, timeout=5.0):
    """Connects and reads what the server says: first without sending (a server at its limit may answer at once),
    then after sending a GET /health. (status, JSON body or text)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    data = b""
    try:
        sock.settimeout(send_after)
        try:
            data = sock.recv(65536)
        except socket.timeout:
            sock.settimeout(timeout)
            try:
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            except OSError:
                pass
        sock.settimeout(timeout)
        while True:
            try:
                chunk = sock.recv(65536)
            except (socket.timeout, OSError):
                break
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    if not data.startswith(b"HTTP/"):
        return None, data[:120]
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    if b"transfer-encoding: chunked" in head.lower():
        chunks, rest = [], body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            size = int(size.split(b";")[0] or b"0", 16)
            if size == 0:
                break
            chunks.append(rest[:size])
            rest = rest[size + 2:]
        body = b"".join(chunks)
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body[:120]


def slow_clients(ctx):
    """1,200 connections that never finish their request head, on a server whose soft open-file limit is 1,024: normal
    clients keep working, the stalled connections are closed after the idle timeout; past --max-connections new
    connections get 503 TRY_AGAIN_LATER."""
    check = Checks("slow-clients")
    idle, stalled_count = 3, 1200
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    expect(hard == resource.RLIM_INFINITY or hard >= 4096, f"the hard open-file limit is {hard}; slow-clients needs 4,096 (1,200 connections on each side)")
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this process holds the 1,200 client ends

    def low_soft_limit():  # in the server's child process, before exec
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))

    servers, stalled = [], None
    try:
        server = own_server(ctx, "slow-clients", extra=["--idle-timeout-seconds", str(idle), "--max-connections", "4000"], limits=low_soft_limit)
        servers.append(server)
        start(server)
        started = time.time()
        limits = open_file_limits(server.process.pid)
        check("the server raised its soft open-file limit to the hard one", limits[0] == limits[1], f"soft {limits[0]}, hard {limits[1]}")
        accounts = [Account(server, ctx.api_token, f"slow-{i}-{uuid.uuid4().hex[:6]}") for i in range(4)]
        seconds = 10 if ctx.quick else 30
        baseline, baseline_failures = workload(server, accounts, 5 if ctx.quick else 15)
        expect(not baseline_failures, f"the baseline load failed before any slow client: {baseline_failures[:3]}")

        stalled = Stalled(server.port)
        opening = time.time()
        connected = stalled.open(stalled_count)
        opened_in = time.time() - opening
        peak_fds = [descriptors(server.process.pid)]
        check(f"all {stalled_count} slow connections connect", connected == stalled_count, f"{connected} connected, {stalled.refused} did not")

        def keep():  # the server closes idle ones; new slow clients take their place while the load runs
            if stalled.reap():
                stalled.open(stalled_count - len(stalled.sockets), within=2)
            peak_fds.append(descriptors(server.process.pid))

        loaded, failures = workload_beside(server, accounts, seconds, keep)
        open_at_end = len(stalled.sockets)
        closed_during = len(stalled.lifetimes)
        check("normal clients see no failure while the slow connections are open", not failures, f"{len(failures)} failed: {failures[:3]}")
        check("the server held the slow connections (beyond 1,024 descriptors)", max(peak_fds) >= stalled_count,
              f"at most {max(peak_fds)} open descriptors")
        last_opened = max(stalled.open_at.values(), default=time.time())
        while stalled.sockets and time.time() < last_opened + idle + 5:
            stalled.reap()
            time.sleep(0.05)
        left = len(stalled.sockets)
        slowest = max(stalled.lifetimes, default=float("nan"))
        check(f"every slow connection is closed by the server within {idle} + 3 s of its last byte",
              left == 0 and slowest <= idle + 3, f"{left} still open {idle + 5} s after the last was opened; the slowest closed after {slowest:.1f} s")
        stalled.close_all()

        # Past --max-connections (a second server with a small limit): new connections get 503 at once.
        small = own_server(ctx, "max-connections", extra=["--idle-timeout-seconds", "30", "--max-connections", "50"])
        servers.append(small)
        start(small)
        holders = Stalled(small.port)
        holders.HEAD = b""  # connected, nothing sent
        held = holders.open(50)
        time.sleep(0.5)
        extras = []
        askers = [threading.Thread(target=lambda: extras.append(raw_answer(small.port, send_after=0.5)), daemon=True) for _ in range(10)]
        for asker in askers:
            asker.start()
        for asker in askers:
            asker.join(timeout=30)
        refused = [e for e in extras if e[0] == 503 and isinstance(e[1], dict) and e[1].get("serverErrorCode") == "TRY_AGAIN_LATER"]
        check("connections past --max-connections get 503 with serverErrorCode TRY_AGAIN_LATER", len(refused) == len(extras),
              f"{len(extras) - len(refused)} of {len(extras)} did not: {[(s, str(b)[:100]) for s, b in extras if (s, b) not in refused][:3]}")
        holders.close_all()
        deadline, back = time.time() + 3, None
        while time.time() < deadline and back != 200:
            try:
                back = request(small.port, "GET", "/health", timeout=2)[0]
            except OSError:
                time.sleep(0.1)
        check("once connections close the server accepts new ones", back == 200, f"/health answered {back}")
        ctx.report("slow-clients", f"server soft/hard open-file limit {limits[0]}/{limits[1]} (started at 1024); {connected} slow connections "
                                   f"opened in {opened_in:.1f} s, server descriptors up to {max(peak_fds)}; {len(loaded)} normal requests in {seconds} s "
                                   f"with them open, {len(failures)} failed; p50/p99 {statistics.median(loaded) if loaded else float('nan'):.0f}/"
                                   f"{percentile(loaded, 0.99):.0f} ms against a baseline of {statistics.median(baseline):.0f}/{percentile(baseline, 0.99):.0f} ms "
                                   f"({len(baseline)} requests); {closed_during} slow connections closed by the server during the load and replaced, "
                                   f"{open_at_end} open at its end, {left} left {idle + 5} s later, the slowest seen closed {slowest:.1f} s after its last byte "
                                   f"(looked at every 0.2 s); "
                                   f"{held} connections held on a --max-connections 50 server, then {len(refused)} of {len(extras)} more got 503 "
                                   f"TRY_AGAIN_LATER; {len(check.passed)} promises held, {len(check.failed)} broken; {time.time() - started:.0f} s")
    finally:
        if stalled:
            stalled.close_all()
        for server in servers:
            stop(server)
    check.finish()


# MARK: slow-bodies

class Trickling(Stalled):
    """Connections from one address that send a whole request head and then its body 10 bytes every 2 s: never idle,
    far below any rate a real client sends at."""

    HEAD = (f"POST {BASE}/private/records/lookup?ckAPIToken=x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: 100000\r\n\r\n{{").encode()

    def drip(self):
        for fd, sock in list(self.sockets.items()):
            try:
                sock.send(b"          ")
            except OSError:
                pass


def slow_bodies(ctx):
    """1,000 connections from one address (127.0.0.2) trickle request bodies on a server that keeps 300 connections
    (the issue's --max-connections 300), while four accounts on 127.0.0.1 save and fetch: the per-address cap refuses
    what is past 256 of them with 503 THROTTLED, the body pace answers the rest 408 within its 10 s of slack, and the
    normal clients see nothing."""
    check = Checks("slow-bodies")
    count, slack = 1000, 10
    server, trickling = None, None
    try:
        server = own_server(ctx, "slow-bodies", extra=["--max-connections", "300"])
        start(server)
        started = time.time()
        accounts = [Account(server, ctx.api_token, f"bodies-{i}-{uuid.uuid4().hex[:6]}") for i in range(4)]
        seconds = 20 if ctx.quick else 40
        baseline, baseline_failures = workload(server, accounts, 5 if ctx.quick else 15)
        expect(not baseline_failures, f"the baseline load failed before any slow body: {baseline_failures[:3]}")

        trickling = Trickling(server.port, source="127.0.0.2")
        connected = trickling.open(count)
        most_open = [len(trickling.sockets)]
        last_drip = [0.0]

        def keep():  # closed ones are replaced at once, so the address always tries to hold 1,000
            trickling.reap()
            if len(trickling.sockets) < count:
                trickling.open(count - len(trickling.sockets), within=1)
            if time.time() - last_drip[0] >= 2:
                trickling.drip()
                last_drip[0] = time.time()
            most_open.append(len(trickling.sockets))

        loaded, failures = workload_beside(server, accounts, seconds, keep)
        last_opened = max(trickling.open_at.values(), default=time.time())
        while trickling.sockets and time.time() < last_opened + slack + 5:
            trickling.reap()
            trickling.drip()
            time.sleep(0.2)
        left = len(trickling.sockets)
        slowest = max(trickling.lifetimes, default=float("nan"))
        p99, base_p99 = percentile(loaded, 0.99), percentile(baseline, 0.99)
        check("normal clients see no failure while one address trickles 1,000 bodies", not failures, f"{len(failures)} failed: {failures[:3]}")
        # The p99 against the baseline is a figure (docs/RELIABILITY.md), not a promise: on two shared cores it moves with
        # whatever else runs, and speed goals are measured, never asserted.
        check("connections past the address's share are refused 503", trickling.statuses.get(503, 0) > 0, f"answers {trickling.statuses}")
        check("trickled bodies are answered 408", trickling.statuses.get(408, 0) > 0, f"answers {trickling.statuses}")
        check(f"every trickling connection is closed within {slack} + 3 s", left == 0 and slowest <= slack + 3,
              f"{left} still open {slack + 5} s after the last was opened; the slowest closed after {slowest:.1f} s")
        ctx.report("slow-bodies", f"{connected} of {count} trickling connections from 127.0.0.2 connected at first, each closed one replaced "
                                  f"for {seconds} s ({len(trickling.lifetimes)} closed by the server in all, at most {max(most_open)} open at once on our "
                                  f"side; answers {dict(sorted(trickling.statuses.items()))}, the slowest closed {slowest:.1f} s after it opened, "
                                  f"{left} left); {len(loaded)} normal requests from 127.0.0.1, {len(failures)} failed, p50/p99 "
                                  f"{statistics.median(loaded) if loaded else float('nan'):.0f}/{p99:.0f} ms against a baseline of "
                                  f"{statistics.median(baseline):.0f}/{base_p99:.0f} ms ({len(baseline)} requests); {len(check.passed)} promises held, "
                                  f"{len(check.failed)} broken; {time.time() - started:.0f} s")
    finally:
        if trickling:
            trickling.close_all()
        stop(server)
    check.finish()


# MARK: waiters

def waiters(ctx):
    """One account holds long polls up to its limit; their clients go away; the server lets go of them at once."""
    check = Checks("waiters")
    limit = 300
    server, sockets = None, []
    try:
        server = own_server(ctx, "waiters", extra=["--waiters-per-account", str(limit), "--max-wait-seconds", "60"])
        start(server)
        started = time.time()
        account = Account(server, ctx.api_token, f"waiters-{uuid.uuid4().hex[:6]}")
        status, _, reply = account.call("changes/database", {})
        expect(status == 200, f"changes/database answered {status}: {reply}")
        token = reply["syncToken"]
        body = json.dumps({"syncToken": token, "timeout": 60}).encode()
        head = (f"POST {account.path('changes/wait')} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        for _ in range(limit):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            sock.sendall(head + body)
            sockets.append(sock)
        gauge_name = "stadiumcloud_waiting_requests"
        deadline, gauge = time.time() + 15, None
        while time.time() < deadline:
            gauge = metric(server.port, gauge_name)
            if gauge is None or gauge >= limit:
                break
            time.sleep(0.1)
        status, _, over = account.call("changes/wait", {"syncToken": token, "timeout": 0})
        expect(status == 503 and over.get("serverErrorCode") == "THROTTLED",
               f"with {limit} long polls held, one more answered {status} {over} instead of 503 THROTTLED: the limit was not reached")
        answered_early = 0
        for sock in sockets:
            sock.setblocking(False)
            try:
                answered_early += bool(sock.recv(1, socket.MSG_PEEK))
            except BlockingIOError:
                pass
        expect(answered_early == 0, f"{answered_early} long polls were answered before their clients went away")

        for sock in sockets:  # the clients go away
            sock.close()
        closed_at = time.time()
        sockets = []
        series, gauge_freed, accepted, probe = [], None, None, None
        while time.time() < closed_at + 1.0 and (accepted is None or (gauge is not None and gauge_freed is None)):
            if gauge is not None and gauge_freed is None:
                value = metric(server.port, gauge_name)
                series.append(value)
                if value == 0:
                    gauge_freed = time.time() - closed_at
            if accepted is None:
                probe = account.call("changes/wait", {"syncToken": token, "timeout": 0})
                if probe[0] == 200:
                    accepted = time.time() - closed_at
            time.sleep(0.05)
        if gauge is not None:
            check(f"{gauge_name} drops to 0 within 1 s of the clients closing", gauge_freed is not None,
                  f"it read {series[:3]} … {series[-3:]} during that second")
        check("a reconnecting device's long poll is accepted (not 503 THROTTLED) within 1 s of the others closing", accepted is not None,
              f"still {probe[0]} {probe[2].get('serverErrorCode')} ({str(probe[2].get('reason'))[:100]}) 1 s after they closed" if probe else "never asked")
        if accepted is not None:
            began = time.time()
            status, _, reply = account.call("changes/wait", {"syncToken": token, "timeout": 2})
            held_for = time.time() - began
            check("that device's long poll is then held and answered", status == 200 and reply.get("changed") is False and held_for >= 1.5,
                  f"{status} {reply} after {held_for:.1f} s")
        # Connections reset (RST, a phone changing network) right after their request: the server may not have reached
        # the wait yet, and must free each place all the same.
        resets, linger = 40, struct.pack("ii", 1, 0)
        for _ in range(resets):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            sock.sendall(head + body)
            sock.close()
        reset_at, last_held, reset_series = time.time(), None, []
        while gauge is not None and time.time() < reset_at + 1.5:
            value = metric(server.port, gauge_name)
            reset_series.append(value)
            if value:
                last_held = time.time() - reset_at
            time.sleep(0.05)
        if gauge is not None:
            check(f"{resets} long polls reset right after their request hold no place 1 s later", not reset_series[-1] and (last_held or 0) <= 1.0,
                  f"{gauge_name} read {reset_series[-3:]} 1.5 s after the resets, last non-zero {last_held} s after them")
        # A server shutting down answers its waiters at once (docs/SYNC.md), whether or not their clients are still there.
        server.process.send_signal(signal.SIGTERM)
        signalled = time.time()
        try:
            code = server.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
            server.kill9()
        exited = time.time() - signalled
        check("after SIGTERM the server exits 0 within 5 s", code == 0, f"still running after 5 s (killed)" if code is None else f"exit {code}")
        ctx.report("waiters", f"{limit} long polls of one account held ({gauge_name} read {gauge if gauge is not None else 'absent'}), the next "
                              f"answered 503 THROTTLED; after their clients closed: gauge at 0 after "
                              f"{'%.2f s' % gauge_freed if gauge_freed is not None else 'more than 1 s'}, a new long poll accepted after "
                              f"{'%.2f s' % accepted if accepted is not None else 'more than 1 s'}; {resets} polls reset right after their request: the gauge "
                              f"last read non-zero {'%.2f s' % last_held if last_held is not None else 'never'} after the resets; SIGTERM: "
                              f"{'exit %s after %.1f s' % (code, exited) if code is not None else 'still running after 5 s'}; {len(check.passed)} promises held, "
                              f"{len(check.failed)} broken; {time.time() - started:.0f} s")
    finally:
        for sock in sockets:
            sock.close()
        stop(server)
    check.finish()


SCENARIOS = {"disk-full": disk_full, "slow-clients": slow_clients, "slow-bodies": slow_bodies, "waiters": waiters}
