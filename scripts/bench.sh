#!/usr/bin/env bash
# The project's benchmark (issue 11; README "Performance"): every row of the performance
# table for settle, side by side with a hand-written Python reconciler
# (Benchmarks/python-reconciler/) and Apple's Python library for JWS. Release build.
#
#   scripts/bench.sh            the full table (N=5,000; passes at 1 k, 10 k, 100 k; 1 M status ledger)
#   scripts/bench.sh --quick    a short subset (N=1,000; passes at 1 k, 3 k; 100 k status ledger)
#   scripts/bench.sh --rows rate   only the rate-limit rows (20,000 orders at 200/s; ~6 min;
#                                the two-host row needs PostgreSQL: SETTLE_BENCH_POSTGRES_URL)
#   scripts/bench.sh --help     every option (sizes, rows, timeouts)
#
# Needs python3 with requests and app-store-server-library (pip install requests
# app-store-server-library); --no-python runs settle alone.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product settle >/dev/null
swift build -c release --product settle-bench >/dev/null
bin="$(swift build -c release --show-bin-path)"
if [[ "${1:-}" == "--help" ]]; then
    "$bin/settle-bench" --help 2>&1 | sed 's/^settle-bench: unknown option --help//'
    exit 0
fi
exec "$bin/settle-bench" "$@"
