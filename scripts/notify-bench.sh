#!/usr/bin/env bash
# Notifications/s the endpoint takes (verify, store durably, answer 200) while reconcile passes
# run on loopback; bounded in count and time. Prints numbers; see README "Performance".
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product settle-notify-bench >/dev/null
bench="$(swift build -c release --show-bin-path)/settle-notify-bench"
"$bench" --notifications 2000 --clients 1 --max-seconds 60
"$bench" --notifications 2000 --clients 8 --max-seconds 60
