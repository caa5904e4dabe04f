#!/usr/bin/env bash
# kill -9 of `settle run` at random instants while Google Play orders are delivered, at volume
# (issue 23; Tests/settleTests/PlayCrashFaultTests.swift is the suite's short form). ORDERS Play
# orders (default 1000: half consumables, a quarter non-consumables, a quarter subscriptions,
# one buyer each) against `settle simulator`'s fake Google, through the README's idempotent
# hook on a file (exit 80 for a key granted before; flock, as hooks run side by side and a
# killed settle's hook may still run beside the next one's). KILLS times (default 100) a `settle
# run` is started and SIGKILLed once the grants reach a random count, a random few
# milliseconds later; a last one runs until no order is left to work on, then gets SIGTERM.
#
# A tap between settle and the fake Google records, for each acknowledge or consume, how many
# grants the hook had made at that moment; at the end it reads every purchase back from the
# fake. Printed: orders, kills, lost (not finished or never granted), granted twice, granted
# but not acknowledged/consumed, acknowledged before grant; exit 1 on any. Purchase tokens are
# made here and never printed. SEED=<n> replays the kill instants printed first.
#
#   scripts/play-crash-test.sh                       # ORDERS=1000 KILLS=100
#   ORDERS=200 KILLS=20 SEED=7 scripts/play-crash-test.sh
#   CONFIGURATION=release KEEP=1 scripts/play-crash-test.sh   # release build; keep the folder
set -euo pipefail
cd "$(dirname "$0")/.."

orders=${ORDERS:-1000}
kills=${KILLS:-100}
seed=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
configuration=${CONFIGURATION:-debug}
swift build -c "$configuration" --product settle >/dev/null
settle="$(swift build -c "$configuration" --show-bin-path)/settle"
work=$(mktemp -d /tmp/settle-play-crash-XXXXXX)
pids=()    # the simulator and the tap
daemon=""  # the settle run alive now, if any (a pid waited for is never signalled again: it may be reused)

cleanup() {
    [ -z "$daemon" ] || kill -KILL "$daemon" 2>/dev/null || true
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in $daemon "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    [ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT

echo "seed $seed: $orders Play orders, $kills kills of settle run (SEED=$seed replays the kill instants)"

# The purchases (Google's JSON for the simulator's plans file), which order holds each, and the
# kill instants: sorted grant counts to wait for, each with a delay of 0-40 ms after it.
python3 - "$work" "$orders" "$kills" "$seed" <<'EOF'
import json, random, secrets, sys, time
work, n, kills, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
bought = int(time.time() * 1000) - 60_000
products, subscriptions, rows = [], [], []
for i in range(n):
    kind = "consumable" if i % 4 < 2 else "non_consumable" if i % 4 == 2 else "subscription"
    token = "tok-" + secrets.token_urlsafe(48)
    user, key = f"u-{i}", f"GPA.3300-0000-{1000 + i}"
    if kind == "subscription":
        key += "..0"
        product = "pro_monthly"
        subscriptions.append({"purchase_token": token, "purchase": {
            "subscriptionState": "SUBSCRIPTION_STATE_ACTIVE", "acknowledgementState": "ACKNOWLEDGEMENT_STATE_PENDING",
            "latestOrderId": key, "startTime": "2026-12-01T10:00:00Z",
            "externalAccountIdentifiers": {"obfuscatedExternalAccountId": user},
            "lineItems": [{"productId": product, "expiryTime": "2099-01-01T00:00:00Z", "latestSuccessfulOrderId": key}]}})
    else:
        product = "gems_100" if kind == "consumable" else "premium_unlock"
        products.append({"purchase_token": token, "purchase": {
            "purchaseState": 0, "consumptionState": 0, "acknowledgementState": 0, "orderId": key, "productId": product,
            "purchaseTimeMillis": str(bought), "obfuscatedExternalAccountId": user}})
    rows.append((f"o-{i}", user, kind, product, key, token))
json.dump({"google_play": {"products": products, "subscriptions": subscriptions}}, open(f"{work}/plans.json", "w"))
with open(f"{work}/purchases.tsv", "w") as f:
    for row in rows: f.write("\t".join(row) + "\n")
rng = random.Random(seed)
with open(f"{work}/kills.txt", "w") as f:
    for threshold in sorted(rng.randrange(n) for _ in range(kills)):
        f.write(f"{threshold} {rng.uniform(0, 0.04):.4f}\n")
EOF

# The tap: forwards every request to the fake Google; for an acknowledge or consume it notes the
# order, the call, how many grants the hook had made when it came, and Google's status.
# GET /tap/final reads every purchase back from the fake with the bearer token settle last used.
cat > "$work/tap.py" <<'PY'
import http.client, http.server, json, sys, threading, urllib.parse
upstream, work = urllib.parse.urlsplit(sys.argv[1]), sys.argv[2]
purchases = {}
for line in open(f"{work}/purchases.tsv"):
    order, user, kind, product, key, token = line.rstrip("\n").split("\t")
    purchases[token] = (order, kind, product)
lock, bearer = threading.Lock(), [None]
base = "/androidpublisher/v3/applications/com.example.game/purchases"

def grants_made():
    try:
        with open(f"{work}/grants.log", "rb") as f: return f.read().count(b"\n")
    except FileNotFoundError: return 0

def upstream_call(method, path, body=None, headers={}):
    connection = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=30)
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    return response, response.read()

class Tap(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def do_GET(self): self.final() if self.path == "/tap/final" else self.forward()
    def do_POST(self): self.forward()
    def answer(self, status, body, content_type="application/json"):
        """Whether the answer reached settle (a killed settle reads none)."""
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            return True
        except OSError:
            self.close_connection = True
            return False
    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection", "content-length", "expect")}
        if "Authorization" in self.headers: bearer[0] = self.headers["Authorization"]
        last = self.path.split("?")[0].rsplit("/", 1)[-1]
        verb = last.rsplit(":", 1)[1] if ":" in last else ""
        granted = grants_made() if verb in ("acknowledge", "consume") else None
        response, data = upstream_call(self.command, self.path, body, headers)
        heard = self.answer(response.status, data, response.getheader("Content-Type") or "application/json")
        if granted is not None:
            order = purchases.get(urllib.parse.unquote(last.rsplit(":", 1)[0]), ("unknown",))[0]
            with lock, open(f"{work}/finishes.log", "a") as f: f.write(f"{order} {verb} {granted} {response.status} {int(heard)}\n")
    def final(self):
        with open(f"{work}/google-final.log", "w") as f:
            for token, (order, kind, product) in purchases.items():
                path = f"{base}/subscriptionsv2/tokens/{token}" if kind == "subscription" else f"{base}/products/{product}/tokens/{token}"
                response, data = upstream_call("GET", path, headers={"Authorization": bearer[0] or ""})
                p = json.loads(data) if response.status == 200 else {}
                acknowledged = p.get("acknowledgementState") in (1, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
                f.write(f"{order} {kind} {int(acknowledged)} {int(p.get('consumptionState') == 1)} {response.status}\n")
        self.answer(200, b"{}")

class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    def handle_error(self, request, address): pass  # a settle killed mid-request
server = Server(("127.0.0.1", 0), Tap)
open(f"{work}/tap.port.tmp", "w").write(str(server.server_address[1]))
import os; os.rename(f"{work}/tap.port.tmp", f"{work}/tap.port")
server.serve_forever()
PY

"$settle" simulator --google-key "$work/play-service-account.json" --script "$work/plans.json" >"$work/simulator.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q '^google_play.api_url: ' "$work/simulator.log" && break; sleep 0.1; done
google=$(sed -n 's/^google_play.api_url: //p' "$work/simulator.log")
[ -n "$google" ] || { echo "FAIL: the simulator did not start"; cat "$work/simulator.log"; exit 1; }
python3 "$work/tap.py" "$google" "$work" 2>"$work/tap.log" &
pids+=($!)
for _ in $(seq 100); do [ -e "$work/tap.port" ] && break; sleep 0.1; done
[ -e "$work/tap.port" ] || { echo "FAIL: the tap did not start"; exit 1; }
tap="http://127.0.0.1:$(cat "$work/tap.port")"

# The README's idempotent hook, on a file.
cat > "$work/grant.sh" <<EOF
#!/bin/sh
cat > /dev/null
exec 9>> "$work/grants.lock"
flock 9
if cut -d ' ' -f 1 "$work/grants.log" 2>/dev/null | grep -qxF "\$SETTLE_IDEMPOTENCY_KEY"; then
    echo "\$SETTLE_IDEMPOTENCY_KEY \$SETTLE_ORDER_ID" >> "$work/already-granted.log"
    exit 80
fi
echo "\$SETTLE_IDEMPOTENCY_KEY \$SETTLE_ORDER_ID" >> "$work/grants.log"
exit 0
EOF
chmod 755 "$work/grant.sh"
# Requests go to Google through the tap; the token exchange straight to the fake, whose token
# endpoint checks that the assertion names it.
cat > "$work/settle.json" <<EOF
{
  "ledger": "$work/ledger.sqlite3",
  "bundle_id": "com.example.game",
  "products": {
    "gems_100": {"type": "consumable", "store": "google_play", "grant": {"gems": 100}},
    "premium_unlock": {"type": "non_consumable", "store": "google_play"},
    "pro_monthly": {"type": "auto_renewable", "store": "google_play"}
  },
  "user_binding": {"app_account_token": "user_id"},
  "google_play": {"package_name": "com.example.game", "service_account_file": "play-service-account.json",
                  "api_url": "$tap", "token_url": "$google/token"},
  "delivery": {"command": ["$work/grant.sh"], "timeout_seconds": 10},
  "schedule": {"interval_seconds": 1, "concurrency": 8},
  "http": {"connect_timeout_seconds": 2, "timeout_seconds": 10},
  "log_level": "debug"
}
EOF
"$settle" migrate --config "$work/settle.json" >/dev/null
# The backend's rows, as the README's "The ledger (for backends)" writes them.
python3 - "$work" <<'EOF'
import sqlite3, sys
work = sys.argv[1]
db = sqlite3.connect(f"{work}/ledger.sqlite3")
with db:
    for line in open(f"{work}/purchases.tsv"):
        order, user, kind, product, key, token = line.rstrip("\n").split("\t")
        db.execute("INSERT INTO orders(order_id, user_id, product_id, store, purchase_token) VALUES (?, ?, ?, 'google_play', ?)",
                   (order, user, product, token))
db.close()
EOF
touch "$work/grants.log" "$work/already-granted.log" "$work/finishes.log"

grants() { wc -l < "$work/grants.log"; }
# Orders settle still works on (not finished, rejected or set aside for a person).
cat > "$work/working.py" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
print(db.execute("SELECT count(*) FROM orders WHERE state IN ('pending', 'verifying', 'delivering')").fetchone()[0])
EOF
working() { python3 "$work/working.py" "$work/ledger.sqlite3"; }

started=$(date +%s.%N)
killed=0 mid_work=0
while read -r threshold delay; do
    "$settle" run --config "$work/settle.json" >>"$work/settle-run.log" 2>&1 &
    daemon=$!
    deadline=$((SECONDS + 60))
    while [ "$(grants)" -lt "$threshold" ] && kill -0 "$daemon" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.01; done
    sleep "$delay"
    kill -0 "$daemon" 2>/dev/null || { echo "FAIL: settle run ended by itself before kill $((killed + 1))"; tail -n 20 "$work/settle-run.log"; exit 1; }
    if [ "$(grants)" -lt "$orders" ]; then mid_work=$((mid_work + 1)); fi
    kill -KILL "$daemon"
    wait "$daemon" 2>/dev/null || true
    daemon=""
    killed=$((killed + 1))
done < "$work/kills.txt"

# The last one: until nothing is left to work on and its own pass ended (so its SIGTERM handler
# is in place), then a graceful stop.
"$settle" run --config "$work/settle.json" >"$work/settle-last.log" 2>&1 &
daemon=$!
deadline=$((SECONDS + 300))
until [ "$(working)" -eq 0 ] && grep -q pass.finished "$work/settle-last.log"; do
    kill -0 "$daemon" 2>/dev/null || { echo "FAIL: the last settle run ended by itself"; tail -n 20 "$work/settle-last.log"; exit 1; }
    [ $SECONDS -lt $deadline ] || { echo "FAIL: orders still worked on 5 minutes after the last start"; break; }
    sleep 0.2
done
kill -TERM "$daemon"
last_status=0
wait "$daemon" || last_status=$?
daemon=""
ended=$(date +%s.%N)
python3 -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + '/tap/final', timeout=120).read()" "$tap"

python3 - "$work" "$orders" "$killed" "$mid_work" "$last_status" "$started" "$ended" <<'EOF'
import collections, sqlite3, sys
work, n, killed, mid_work, last_status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
seconds = float(sys.argv[7]) - float(sys.argv[6])
purchases = {}
for line in open(f"{work}/purchases.tsv"):
    order, user, kind, product, key, token = line.rstrip("\n").split("\t")
    purchases[order] = (kind, key, token)
key_order = {key: order for order, (kind, key, token) in purchases.items()}
db = sqlite3.connect(f"file:{work}/ledger.sqlite3?mode=ro", uri=True)
states = dict(db.execute("SELECT order_id, state || coalesce(' ' || reason, '') FROM orders").fetchall())
ledger_keys = collections.Counter(k for (k,) in db.execute("SELECT grant_key FROM grants"))
grants = [line.split() for line in open(f"{work}/grants.log")]
granted = [key for key, order in grants]
position = {}
for i, key in enumerate(granted): position.setdefault(key, i)
twice = [key for key, count in collections.Counter(granted).items() if count > 1]
strays = [f"{key} {order}" for key, order in grants if key_order.get(key) != order]
not_finished = {o: s for o, s in states.items() if s.split()[0] != "finished"}
never_granted = [o for o, (kind, key, token) in purchases.items() if key not in position]
lost = set(not_finished) | set(never_granted) | (set(purchases) - set(states))
final = {line.split()[0]: line.split()[1:] for line in open(f"{work}/google-final.log")}
def told(order):
    kind, acknowledged, consumed, status = final.get(order, ["?", "0", "0", "?"])
    return consumed == "1" if kind == "consumable" else acknowledged == "1"
unacknowledged = [o for o, (kind, key, token) in purchases.items() if key in position and not told(o)]
early, wrong = [], []
finishes = [line.split() for line in open(f"{work}/finishes.log")]
for order, verb, grants_then, status, heard in finishes:
    if order not in purchases:
        wrong.append(f"{verb} of a token no order holds")
        continue
    kind, key, token = purchases[order]
    if (verb == "consume") != (kind == "consumable"): wrong.append(f"{order} {verb}")
    if position.get(key, n) >= int(grants_then): early.append(f"{order} {verb} with {grants_then} grants made")
ledger_wrong = [k for k, c in ledger_keys.items() if c != 1 or k not in key_order] + [k for k in key_order if k not in ledger_keys]
output = "".join(open(f"{work}/{name}").read() for name in ("settle-run.log", "settle-last.log", "simulator.log"))
printed = sum(1 for kind, key, token in purchases.values() if token in output)
redelivered = sum(1 for _ in open(f"{work}/already-granted.log"))
print(f"orders: {n} ({sum(1 for p in purchases.values() if p[0] == 'consumable')} consumables, "
      f"{sum(1 for p in purchases.values() if p[0] == 'non_consumable')} non-consumables, "
      f"{sum(1 for p in purchases.values() if p[0] == 'subscription')} subscriptions)")
print(f"kills: {killed} ({mid_work} while grants were still to make), then one settle run to the end "
      f"(SIGTERM: exit {last_status}); {seconds:.1f} s")
print(f"lost: {len(lost)}")
print(f"granted twice: {len(twice)}")
print(f"granted not acknowledged/consumed: {len(unacknowledged)}")
print(f"acknowledged before grant: {len(early)}")
print(f"also: re-deliveries answered already granted {redelivered}; acknowledge/consume calls {len(finishes)} "
      f"({sum(1 for f in finishes if f[3] != '200')} not 200, {sum(1 for f in finishes if f[4] == '0')} answered to a settle already killed); wrong call {len(wrong)}; stray grants {len(strays)}; "
      f"ledger grants not one per purchase {len(ledger_wrong)}; tokens printed {printed}")
for what, items in [("lost", sorted(f"{o} {not_finished.get(o, 'never granted')}" for o in lost)), ("granted twice", twice),
                    ("granted not acknowledged/consumed", unacknowledged), ("acknowledged before grant", early),
                    ("wrong call", wrong), ("stray grant", strays), ("ledger grant", ledger_wrong)]:
    for item in items[:10]: print(f"  {what}: {item}")
bad = lost or twice or unacknowledged or early or wrong or strays or ledger_wrong or printed or last_status != 0
print("FAIL" if bad else "PASS")
sys.exit(1 if bad else 0)
EOF
