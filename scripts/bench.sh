#!/usr/bin/env bash
# Throughput of a reconcile pass against the local simulator (real SQLite, loopback HTTP,
# one hook process per order). Prints numbers; see README "Performance".
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product settle-bench >/dev/null
bench="$(swift build -c release --show-bin-path)/settle-bench"
"$bench" --orders 1000 --concurrency 1
"$bench" --orders 1000 --concurrency 8
"$bench" --orders 400 --concurrency 1 --apple-latency-ms 50
"$bench" --orders 400 --concurrency 8 --apple-latency-ms 50
