#!/usr/bin/env python3
"""Live sync figures, against servers bench/live.sh started: commit-to-wake latency in the same process
and across two processes, and what 10,000 idle changes/wait requests cost one process (memory, CPU, database
work, and the write path's throughput beside them). Standard library only: asyncio and raw HTTP/1.1.

Usage (bench/live.sh sets these): live.py URL_A URL_B API_TOKEN WEB_TOKEN SERVER_PID DATABASE_URL
"""
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from urllib.parse import urlparse

URL_A, URL_B, API, WEB, PID, DATABASE_URL = sys.argv[1:7]
PATH = "/database/1/iCloud.com.sportstime.bench/development"
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "200"))
WAITERS = int(os.environ.get("BENCH_WAITERS", "10000"))


class Connection:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, url):
        self.host, self.port = urlparse(url).hostname, urlparse(url).port

    async def open(self):
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def send(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        self.writer.write(
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        await self.writer.drain()

    async def answer(self):
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        body = await self.reader.readexactly(length) if length else b""
        if not body:
            return status, None
        try:
            return status, json.loads(body)
        except ValueError:  # /metrics: the waiting-requests gauge line
            return status, next((l for l in body.decode().splitlines() if l.startswith("stadiumcloud_waiting_requests")), "")

    async def call(self, method, path, body=None):
        await self.send(method, path, body)
        return await self.answer()

    def close(self):
        self.writer.close()


PRIVATE = f"{PATH}/private/{{}}?ckAPIToken={API}&ckWebAuthToken={WEB}"
PUBLIC = f"{PATH}/public/{{}}?ckAPIToken={API}"


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


async def save(connection, name):
    body = {"operations": [{"operationType": "forceReplace", "record": {"recordName": name, "recordType": "Visit", "fields": {"n": {"value": 1}}}}]}
    status, _ = await connection.call("POST", PRIVATE.format("records/modify"), body)
    assert status == 200, status


async def wake_latencies(waiter_url, writer):
    """Per round: a database token, a changes/wait on WAITER_URL's process, then a save through WRITER. Returns
    (save sent -> wait answered, save answered -> wait answered) in ms."""
    waiting = await Connection(waiter_url).open()
    sent_to_woken, answered_to_woken = [], []
    for round in range(ROUNDS):
        _, changes = await waiting.call("POST", PRIVATE.format("changes/database"), {})
        await waiting.send("POST", PRIVATE.format("changes/wait"), {"syncToken": changes["syncToken"], "timeout": 30})
        await asyncio.sleep(0.02)  # the wait reaches the server and registers
        started = time.perf_counter()
        woken = asyncio.ensure_future(waiting.answer())
        await save(writer, f"wake-{round}")
        saved = time.perf_counter()
        status, answer = await woken
        done = time.perf_counter()
        assert status == 200 and answer["changed"], answer
        sent_to_woken.append((done - started) * 1000)
        answered_to_woken.append((done - saved) * 1000)
    waiting.close()
    return sent_to_woken, answered_to_woken


def process_figures():
    with open(f"/proc/{PID}/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    with open(f"/proc/{PID}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return rss, int(fields[11]) + int(fields[12])  # KiB, clock ticks


def database_transactions():
    out = subprocess.run(
        ["psql", DATABASE_URL, "-Atc", "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"],
        capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


async def write_rate(seconds=3.0, connections=8):
    """Saves per second from CONNECTIONS clients in a loop for SECONDS."""
    clients = [await Connection(URL_A).open() for _ in range(connections)]
    done = 0
    deadline = time.perf_counter() + seconds

    async def loop(index, client):
        nonlocal done
        n = 0
        while time.perf_counter() < deadline:
            await save(client, f"rate-{index}-{n % 50}")
            n += 1
            done += 1

    await asyncio.gather(*(loop(i, c) for i, c in enumerate(clients)))
    for client in clients:
        client.close()
    return done / seconds


async def idle_waiters():
    hz = os.sysconf("SC_CLK_TCK")
    probe = await Connection(URL_A).open()
    _, zones = await probe.call("GET", PUBLIC.format("zones/list"))
    token = zones["zones"][0]["syncToken"]
    rate_before = await write_rate()
    # PostgreSQL 15 backends report their counters up to 10 s late when idle: start each window after 11 s.
    await asyncio.sleep(11)
    rss_before, ticks_baseline = process_figures()
    transactions_baseline = database_transactions()
    await asyncio.sleep(10)
    _, ticks_baseline_end = process_figures()
    baseline_transactions = database_transactions() - transactions_baseline - 1
    baseline_cpu = ticks_baseline_end - ticks_baseline
    body = {"zones": [{"zoneID": {"zoneName": "_defaultZone"}, "syncToken": token}], "timeout": 60}
    waiters = []
    opened = time.perf_counter()
    for start in range(0, WAITERS, 500):
        batch = await asyncio.gather(*(Connection(URL_A).open() for _ in range(start, min(WAITERS, start + 500))))
        for waiter in batch:
            await waiter.send("POST", PUBLIC.format("changes/wait"), body)
        waiters += batch
    # Idle means every wait has reached the server and made its one check: the server's gauge says how many wait.
    while True:
        _, gauge = await probe.call("GET", "/metrics")
        if gauge and float(gauge.split()[-1]) >= len(waiters):
            break
        await asyncio.sleep(0.2)
    opening = time.perf_counter() - opened
    await asyncio.sleep(11)
    rss_with, ticks_start = process_figures()
    transactions_start = database_transactions()
    idle = 10.0
    await asyncio.sleep(idle)
    _, ticks_end = process_figures()
    transactions_end = database_transactions()
    _, metrics = await probe.call("GET", "/metrics")
    rate_with = await write_rate()
    for waiter in waiters:
        waiter.close()
    probe.close()
    return {
        "waiters": len(waiters), "opening_s": opening, "rss_before_mib": rss_before / 1024, "rss_with_mib": rss_with / 1024,
        "kib_per_waiter": (rss_with - rss_before) / len(waiters), "cpu_idle_percent": 100 * (ticks_end - ticks_start) / hz / idle,
        # The psql probe itself is one of these; the rest is the server's own background work (pool checks, rate-limit
        # shares), the same with or without waiters.
        "transactions_idle": transactions_end - transactions_start - 1, "transactions_baseline": baseline_transactions,
        "cpu_baseline_percent": 100 * baseline_cpu / hz / idle, "rate_before": rate_before, "rate_with": rate_with,
        "waiting": metrics,
    }


async def main():
    writer = await Connection(URL_A).open()
    same = await wake_latencies(URL_A, writer)
    cross = await wake_latencies(URL_B, writer)
    writer.close()
    print(f"commit-to-wake, {ROUNDS} rounds (release, loopback; a save through process A, the waiter on A or on B)")
    print(f"{'':44} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for label, (sent, answered) in (("same process", same), ("across two processes (LISTEN/NOTIFY)", cross)):
        print(f"{label + ': save sent -> waiter answered':44}"[:44].ljust(44)
              + f" {statistics.median(sent):8.2f} {percentile(sent, 99):8.2f} {max(sent):8.2f}")
        print(f"{'  save answered -> waiter answered':44} {statistics.median(answered):8.2f} {percentile(answered, 99):8.2f} {max(answered):8.2f}")
    figures = await idle_waiters()
    print()
    print(f"{figures['waiters']} idle changes/wait on one process (all waiting after {figures['opening_s']:.1f} s; measured 11 s later, for 10 s):")
    print(f"  resident memory {figures['rss_before_mib']:.0f} MiB -> {figures['rss_with_mib']:.0f} MiB: {figures['kib_per_waiter']:.1f} KiB per waiter")
    print(f"  server CPU while idle: {figures['cpu_idle_percent']:.2f} % of one core over 10 s "
          f"(without waiters: {figures['cpu_baseline_percent']:.2f} %)")
    print(f"  database transactions while idle: {figures['transactions_idle']} in 10 s, without waiters "
          f"{figures['transactions_baseline']}: {(figures['transactions_idle'] - figures['transactions_baseline']) / figures['waiters']:.4f} per waiter")
    print(f"  saves/s at 8 clients: {figures['rate_before']:.0f} without waiters, {figures['rate_with']:.0f} with them "
          f"({100 * figures['rate_with'] / figures['rate_before']:.0f} %)")
    print(f"  the server's gauge: {figures['waiting']}")


asyncio.run(main())
