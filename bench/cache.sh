#!/usr/bin/env bash
# Caches in front (bench/README.md, "Caches in front"): the fault scenario `cache` (scripts/faults/cache.py) with a
# release build: CACHE_DEVICES (10,000) simulated devices poll the cacheable public reads through nginx's proxy cache
# for CACHE_ROUNDS (3) rounds while the data changes. Prints origin requests and server CPU per 1,000 device requests
# and latency through the cache. BENCH_BIN runs a stadiumcloud binary already built.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/postgres.sh
source scripts/lib/bench-server.sh
ensure_packages
bin="$(bench_binary)"
python3 scripts/faults/run.py --binary "$bin" --only cache
