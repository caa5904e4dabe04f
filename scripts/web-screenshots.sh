#!/usr/bin/env bash
# Screenshots of the support console for the docs (docs/images/web-*.png): seeds a demo ledger
# (settle demo --keep), serves it with settle web (read-only, then with actions on), and has
# headless chromium draw each page: the overview, search results, an order's page, a
# notification's page, a customer's page, and, with actions on, an order's page with the actions,
# a list with its bulk retry and the audit log.
#
#   scripts/web-screenshots.sh [SETTLE_BINARY]
#
# Needs chromium (apt-get install chromium fonts-dejavu-core). Writes only docs/images/web-*.png
# and removes the demo folder it made.
set -euo pipefail
cd "$(dirname "$0")/.."
settle=${1:-.build/debug/settle}
[ -x "$settle" ] || { echo "web-screenshots: $settle is not built (swift build)" >&2; exit 1; }
command -v chromium >/dev/null || { echo "web-screenshots: chromium is not installed (apt-get install chromium fonts-dejavu-core)" >&2; exit 1; }
mkdir -p docs/images

work=$(mktemp -d)
web=""
cleanup() {
    [ -n "$web" ] && kill "$web" 2>/dev/null && wait "$web" 2>/dev/null
    [ -n "${demo:-}" ] && rm -rf "$demo"
    rm -rf "$work"
}
trap cleanup EXIT

(cd "$work" && TMPDIR="$work" "$OLDPWD/$settle" demo --keep > demo.out)
demo=$(sed -n 's/^kept \([^ ]*\) .*/\1/p' "$work/demo.out")
[ -d "$demo" ] || { echo "web-screenshots: settle demo kept no folder" >&2; exit 1; }
notification=$("$settle" status --config "$demo/settle.json" apple-2000000300000001 --json | sed -n 's/.*"uuid": "\([^"]*\)".*/\1/p' | head -n 1)

serve() {
    "$settle" web --config "$1" --listen 127.0.0.1:0 > "$work/web.out" 2> "$work/web.err" &
    web=$!
    for _ in $(seq 100); do
        base=$(sed -n 's#^settle web listening on \(http://[^/]*\)/.*#\1#p' "$work/web.out")
        [ -n "$base" ] && return
        sleep 0.1
    done
    echo "web-screenshots: settle web did not start: $(cat "$work/web.err")" >&2
    exit 1
}

shoot() {
    local name=$1 path=$2 height=${3:-1400}
    chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" \
        --window-size=1280,"$height" --screenshot="docs/images/web-$name.png" "$base$path" 2>/dev/null
    echo "docs/images/web-$name.png: $path"
}

serve "$demo/settle.json"
shoot overview / 1500
shoot search "/search?q=u-51" 700
shoot order /orders/o-1005 1500
shoot notification "/notifications/$notification" 700
shoot customer /users/u-51 1200
kill "$web"; wait "$web" 2>/dev/null || true; web=""

# The same ledger with web.actions on: the order waiting for a person, with its forms.
sed '0,/{/s//{\n  "web": {"actions": true},/' "$demo/settle.json" > "$demo/settle-actions.json"
serve "$demo/settle-actions.json"
shoot actions /orders/o-3002 1300
shoot list "/orders?state=needs_attention" 900
shoot audit /audit 700
