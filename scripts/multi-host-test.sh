#!/usr/bin/env bash
# Several hosts, one PostgreSQL ledger: three `settle run`, each in its own network namespace
# with its own host name (ip netns, a veth pair, unshare --uts), its own local Apple simulator
# (on the namespace's loopback), and one PostgreSQL reached over the veths. ORDERS orders
# (default 2000); once a tenth are finished, host 1 is SIGKILLed and host 2's veth is downed for
# longer than a lease, then brought back. Meanwhile App Store Server Notifications for NOTIFY
# purchases no backend enqueued (default 300) are posted, each to all three hosts at once (as
# Apple's retries through one URL in front of them land anywhere), again until one host
# answers 200, including while host 1 is dead and host 2 cut off; once they are delivered, a
# REFUND of each is posted the same way. Checks: every order finished, no purchase granted
# under two keys or to two orders, host 2's late writes refused and its queued deliveries not
# started once taken over (order.lease_lost logged), each notification stored once, each
# purchase delivered once and each refund revoked once, nothing stuck. Needs root
# (namespaces); all traffic stays on this machine.
#
#   scripts/multi-host-test.sh            # ORDERS=2000, NOTIFY=300 by default
#   BENCH=1 scripts/multi-host-test.sh    # throughput of 1, 2 and 3 daemons instead
set -euo pipefail
cd "$(dirname "$0")/.."

orders=${ORDERS:-2000}
notify=${NOTIFY:-300}
port=${SETTLE_MULTIHOST_PORT:-55499}
work=$(mktemp -d /tmp/settle-multihost-XXXXXX)
chmod 755 "$work"
swift build >/dev/null
settle="$(swift build --show-bin-path)/settle"
pids=()

cleanup() {
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    for i in 1 2 3; do
        ip netns del "settle-h$i" 2>/dev/null || true
        ip link del "vh$i" 2>/dev/null || true
        ip route del blackhole "10.77.$i.0/24" 2>/dev/null || true
    done
    SETTLE_TEST_POSTGRES_DIR="$work/pg" SETTLE_TEST_POSTGRES_PORT=$port scripts/test-postgres.sh stop >/dev/null 2>&1 || true
    [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

# The network: host i is 10.77.i.2 in namespace settle-hi; this side of its veth is 10.77.i.1.
for i in 1 2 3; do
    ip netns add "settle-h$i"
    ip link add "vh$i" type veth peer name "vn$i"
    ip link set "vn$i" netns "settle-h$i"
    ip addr add "10.77.$i.1/24" dev "vh$i"
    ip link set "vh$i" up
    ip -n "settle-h$i" addr add "10.77.$i.2/24" dev "vn$i"
    ip -n "settle-h$i" link set "vn$i" up
    ip -n "settle-h$i" link set lo up
    # While a host's veth is down, what is sent to it from here is dropped (a partition), never
    # routed out of this machine by the default route.
    ip route add blackhole "10.77.$i.0/24" metric 1000
done

# One PostgreSQL, listening on loopback and on this side of each veth.
export SETTLE_TEST_POSTGRES_DIR="$work/pg" SETTLE_TEST_POSTGRES_PORT=$port
export SETTLE_TEST_POSTGRES_LISTEN="127.0.0.1,10.77.1.1,10.77.2.1,10.77.3.1"
export SETTLE_TEST_POSTGRES_HBA="host all all 10.77.0.0/16 trust"
eval "$(scripts/test-postgres.sh start 2>/dev/null)"
admin=$SETTLE_TEST_POSTGRES_URL

# Apple: the same scripted receipts, and the purchases its notifications tell of, in every
# host's simulator (each answers from its own loopback). The purchases' buyers are their
# appAccountTokens (user_binding "user_id").
python3 - "$work" "$orders" "$notify" <<'EOF'
import base64, json, sys, time, uuid
work, n, notify = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
receipts = [{"receipt_data": base64.b64encode(f"multihost receipt {i}".encode()).decode(), "environment": "Production",
             "in_app": [{"product_id": "com.example.game.coins100", "transaction_id": f"{3000000000000000 + i}"}]}
            for i in range(n)]
bought = int(time.time() * 1000) - 60_000
purchases = [{"transaction_id": f"{4000000000000000 + i}", "product_id": "com.example.game.coins100",
              "app_account_token": str(uuid.uuid5(uuid.NAMESPACE_URL, f"multihost buyer {i}")), "purchase_date_ms": bought}
             for i in range(notify)]
json.dump({"receipts": receipts, "transactions": purchases}, open(f"{work}/plans.json", "w"))
json.dump(purchases, open(f"{work}/purchases.json", "w"))
with open(f"{work}/orders.sql", "w") as f:
    f.write("BEGIN;\n")
    for i, r in enumerate(receipts):
        data = r["receipt_data"]
        f.write(f"INSERT INTO receipts(sha256, data) VALUES (encode(sha256(convert_to('{data}', 'UTF8')), 'hex'), '{data}') ON CONFLICT DO NOTHING;\n")
        f.write(f"INSERT INTO orders(order_id, user_id, product_id, transaction_id, receipt_sha256) VALUES "
                f"('mh-{i}', 'u-{i % 97}', 'com.example.game.coins100', '{3000000000000000 + i}', encode(sha256(convert_to('{data}', 'UTF8')), 'hex'));\n")
    f.write("COMMIT;\n")
EOF
printf 'multihost-shared-secret\n' > "$work/shared-secret"
chmod 600 "$work/shared-secret"
# The StoreKit anchor settle loads next to its configuration (receipts need no more), the
# simulator's root for its signed notifications and transactions, a Server API key, and the
# revoke hook.
cp Tests/SettleCoreTests/Fixtures/apple/roots/AppleRootCA-G3.pem "$work/"
python3 - "$work" <<'EOF'
import re, sys
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives import serialization
work = sys.argv[1]
chain = open("Sources/Stores/AppStore/Simulator/SimulatorSigningChain.swift").read()
open(f"{work}/sim-root.pem", "w").write(re.search(r'rootPEM = """\n(.*?)"""', chain, re.S).group(1))
key = ec.generate_private_key(ec.SECP256R1())
open(f"{work}/appstore-key.p8", "wb").write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                            serialization.NoEncryption()))
EOF
chmod 600 "$work/appstore-key.p8"
cat > "$work/revoke.sh" <<EOF
#!/bin/sh
cat > /dev/null
echo "\$SETTLE_IDEMPOTENCY_KEY \$SETTLE_ORDER_ID \$(hostname)" >> "$work/revokes.log"
EOF
chmod 755 "$work/revoke.sh"
# Apple's side of the notifications: each signed with the simulator's chain (the same one every
# host trusts), POSTed to all three hosts at once, and again every 2 s until one answers 200.
cat > "$work/notify.py" <<'PY'
import base64, json, re, sys, threading, time, uuid, urllib.error, urllib.request
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils
work, kind, pace = sys.argv[1], sys.argv[2], float(sys.argv[3])
chain = open("Sources/Stores/AppStore/Simulator/SimulatorSigningChain.swift").read()
def pem(name): return re.search(name + r' = """\n(.*?)"""', chain, re.S).group(1)
x5c = ["".join(l for l in pem(n).splitlines() if not l.startswith("-----")) for n in ("leafPEM", "intermediatePEM", "rootPEM")]
key = serialization.load_pem_private_key(pem("leafKeyPEM").encode(), None)
def b64(data): return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
def sign(payload):
    signing = b64(json.dumps({"alg": "ES256", "x5c": x5c}).encode()) + "." + b64(json.dumps(payload).encode())
    r, s = utils.decode_dss_signature(key.sign(signing.encode(), ec.ECDSA(hashes.SHA256())))
    return signing + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
now = int(time.time() * 1000)
def notification(p):
    t = {"transactionId": p["transaction_id"], "originalTransactionId": p["transaction_id"], "bundleId": "com.example.game",
         "productId": p["product_id"], "purchaseDate": p["purchase_date_ms"], "originalPurchaseDate": p["purchase_date_ms"],
         "quantity": 1, "type": "Consumable", "inAppOwnershipType": "PURCHASED", "signedDate": now, "environment": "Production",
         "transactionReason": "PURCHASE", "storefront": "USA", "appAccountToken": p["app_account_token"]}
    if kind == "REFUND": t.update(revocationDate=now, revocationReason=0)
    return json.dumps({"signedPayload": sign({"notificationType": kind, "notificationUUID": str(uuid.uuid4()), "version": "2.0",
                                               "signedDate": now, "data": {"bundleId": "com.example.game", "bundleVersion": "1",
                                               "environment": "Production", "appAppleId": 1234567890,
                                               "signedTransactionInfo": sign(t)}})}).encode()
answers, lock = {}, threading.Lock()
def post(host, body):
    try:
        request = urllib.request.Request(f"http://10.77.{host}.2:8088/apple/notifications/v2", data=body,
                                         headers={"Content-Type": "application/json"})
        status = urllib.request.urlopen(request, timeout=3).status
    except urllib.error.HTTPError as e: status = e.code
    except Exception: status = "no answer"
    with lock: answers[(host, status)] = answers.get((host, status), 0) + 1
    return status
def to_all(body):
    statuses = [None] * 3
    def one(i): statuses[i] = post(i + 1, body)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(3)]
    for t in threads: t.start()
    for t in threads: t.join()
    return 200 in statuses
bodies = [notification(p) for p in json.load(open(f"{work}/purchases.json"))]
waiting, rounds = [], 0
for body in bodies:
    if not to_all(body): waiting.append(body)
    time.sleep(pace)
while waiting and rounds < 150:
    time.sleep(2)
    rounds += 1
    waiting = [body for body in waiting if not to_all(body)]
summary = ", ".join(f"host-{h} {s}: {n}" for (h, s), n in sorted(answers.items(), key=str))
print(f"{kind}: {len(bodies)} notifications, each posted to all three hosts; {summary}; never answered 200: {len(waiting)}")
PY
cat > "$work/grant.sh" <<EOF
#!/bin/sh
payload=\$(cat)
token=\$(printf '%s' "\$payload" | sed -n 's/.*"fencing_token" *: *\([0-9]*\).*/\1/p')
sleep 0.05
echo "\$SETTLE_IDEMPOTENCY_KEY \$SETTLE_ORDER_ID \$(hostname) \$token" >> "$work/deliveries.log"
EOF
chmod 755 "$work/grant.sh"

config() { # host, extra URL parameters
    cat > "$work/settle-$1.json" <<EOF
{
  "ledger": "postgresql://settle@10.77.$1.1:$port/settle_test$2",
  "bundle_id": "com.example.game",
  "receipt_api": {"production_url": "http://127.0.0.1:18080/production/verifyReceipt",
                  "sandbox_url": "http://127.0.0.1:18080/sandbox/verifyReceipt", "shared_secret_file": "shared-secret"},
  "server_api": {"production_url": "http://127.0.0.1:18080/production", "sandbox_url": "http://127.0.0.1:18080/sandbox",
                 "issuer_id": "multihost", "key_id": "MULTIHOST1", "private_key_file": "appstore-key.p8",
                 "app_apple_id": 1234567890, "root_certificates": ["sim-root.pem"], "receipt_root_certificates": ["sim-root.pem"]},
  "notifications": {"listen": "10.77.$1.2:8088", "history_interval_seconds": 30},
  "user_binding": {"app_account_token": "user_id"},
  "products": {"com.example.game.coins100": {"type": "consumable"}},
  "delivery": {"command": ["$work/grant.sh"], "revoke_command": ["$work/revoke.sh"], "timeout_seconds": 5},
  "schedule": {"interval_seconds": 1, "concurrency": 4},
  "http": {"connect_timeout_seconds": 2, "timeout_seconds": 3}
}
EOF
}
config 1 ""
# Host 2 keeps its TCP connections through the cut (no keepalive, no user timeout), so what it
# was writing when cut off arrives after it is back: the late writes the fencing must refuse.
config 2 "?keepalives=0&tcp_user_timeout=0"
config 3 ""

in_host() { # host, command...
    local i=$1; shift
    # Started in the background (a subshell), it execs all the way down (ip netns exec, unshare
    # and sh each exec the next), so $! is the command's own pid and SIGKILL kills the daemon,
    # not a shell around it.
    if [ "$BASHPID" != "$$" ]; then
        exec ip netns exec "settle-h$i" unshare --uts sh -c "hostname host-$i && exec \"\$@\"" sh "$@"
    fi
    ip netns exec "settle-h$i" unshare --uts sh -c "hostname host-$i && exec \"\$@\"" sh "$@"
}

for i in 1 2 3; do
    in_host "$i" "$settle" simulator --listen 127.0.0.1:18080 --script "$work/plans.json" --config "$work/settle-$i.json" \
        >"$work/simulator-$i.log" 2>&1 &
    pids+=($!)
done
sleep 2
"$settle" migrate --config "$work/settle-1.json" >/dev/null 2>&1 || in_host 1 "$settle" migrate --config "$work/settle-1.json"
psql -q "$admin" -f "$work/orders.sql"

finished() { psql -At "$admin" -c "SELECT count(*) FROM orders WHERE state = 'finished'"; }

if [ -n "${BENCH:-}" ]; then
    for daemons in 1 2 3; do
        psql -q "$admin" -c "UPDATE orders SET state = 'pending', finished_at = NULL, next_attempt_at = 0, attempts = 0, reason = NULL,
                              verified_transaction_id = NULL, grant_key = NULL; DELETE FROM grants; DELETE FROM daemons;" >/dev/null
        : > "$work/deliveries.log"
        started=$(date +%s.%N)
        bench=()
        for i in $(seq 1 "$daemons"); do
            in_host "$i" "$settle" run --config "$work/settle-$i.json" >"$work/bench-$daemons-$i.log" 2>&1 &
            bench+=($!); pids+=($!)
        done
        until [ "$(finished)" -ge "$orders" ]; do
            kill -0 "${bench[0]}" 2>/dev/null || { echo "FAIL: a daemon exited"; tail -n 5 "$work/bench-$daemons-1.log"; exit 1; }
            sleep 0.2
        done
        ended=$(date +%s.%N)
        for pid in "${bench[@]}"; do kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; done
        python3 -c "print(f'{$daemons} daemon(s): {$orders} orders in {$ended - $started:.1f} s = {$orders / ($ended - $started):.0f} orders/s')"
    done
    exit 0
fi

declare -A daemon
for i in 1 2 3; do
    in_host "$i" "$settle" run --config "$work/settle-$i.json" >"$work/daemon-$i.log" 2>&1 &
    daemon[$i]=$!
    pids+=($!)
done
started=$(date +%s)
until grep -q notifications.listening "$work/daemon-1.log" && grep -q notifications.listening "$work/daemon-2.log" \
        && grep -q notifications.listening "$work/daemon-3.log"; do sleep 0.2; done
python3 "$work/notify.py" "$work" ONE_TIME_CHARGE 0.3 >"$work/notify-purchases.log" 2>&1 &
poster=$!
pids+=($!)
until [ "$(finished)" -ge $((orders / 10)) ]; do
    kill -0 "${daemon[3]}" 2>/dev/null || { echo "FAIL: host-3's daemon exited"; tail -n 5 "$work/daemon-3.log"; exit 1; }
    sleep 0.1
done
echo "$(finished) finished: SIGKILL host-1, cut host-2 off for 80 s (leases: delivery 65 s, verify 70 s)"
kill -KILL "${daemon[1]}"
ip link set vh2 down
sleep 80
ip link set vh2 up
echo "host-2 is back; waiting for every notification to be answered 200 and every order"
wait "$poster" || { echo "FAIL: the notification poster failed"; cat "$work/notify-purchases.log"; exit 1; }
deadline=$(( $(date +%s) + 600 ))
until [ "$(psql -At "$admin" -c "SELECT count(*) FROM orders WHERE state NOT IN ('finished','rejected','needs_attention')")" -eq 0 ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "FAIL: orders still open after 10 minutes"; break; }
    sleep 1
done
ended=$(date +%s)
apple_open() { psql -At "$admin" -c "SELECT count(*) FROM orders WHERE order_id LIKE 'apple-%' AND state <> 'finished'"; }
until [ "$(apple_open)" -eq 0 ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "FAIL: notification orders still open"; break; }
    sleep 1
done
echo "refunding the $notify purchases Apple told of"
python3 "$work/notify.py" "$work" REFUND 0.02 >"$work/notify-refunds.log" 2>&1
deadline=$(( $(date +%s) + 300 ))
revoked() { psql -At "$admin" -c "SELECT count(*) FROM revocations WHERE state = 'revoked'"; }
until [ "$(revoked)" -ge "$notify" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "FAIL: revokes still owed after 5 minutes"; break; }
    sleep 1
done
sleep 3
for i in 2 3; do kill -TERM "${daemon[$i]}" 2>/dev/null || true; done
wait "${daemon[2]}" "${daemon[3]}" 2>/dev/null || true

echo "--- result after $((ended - started)) s"
psql -At "$admin" -c "SELECT state, count(*) FROM orders GROUP BY state ORDER BY state"
calls=$(wc -l < "$work/deliveries.log")
keys_with_two_orders=$(awk '{print $1, $2}' "$work/deliveries.log" | sort -u | awk '{print $1}' | uniq -d | wc -l)
orders_with_two_keys=$(awk '{print $2, $1}' "$work/deliveries.log" | sort -u | awk '{print $1}' | uniq -d | wc -l)
redelivered=$(awk '{print $1}' "$work/deliveries.log" | sort | uniq -d | wc -l)
late=$(grep -c 'order.lease_lost' "$work/daemon-2.log" || true)
echo "hook calls: $calls (re-deliveries with the same key: $redelivered)"
echo "keys granted to two orders: $keys_with_two_orders; orders granted under two keys: $orders_with_two_keys"
echo "host-2 late writes refused (order.lease_lost): $late"
grep 'order.lease_lost' "$work/daemon-2.log" | head -3 || true
echo "rescued by host-3: $(grep -c 'order.rescued' "$work/daemon-3.log" || true)"
open=$(psql -At "$admin" -c "SELECT count(*) FROM orders WHERE state <> 'finished'")
grants=$(psql -At "$admin" -c "SELECT count(*) FROM grants")
echo "not finished: $open; grants rows: $grants"
echo "--- notifications"
cat "$work/notify-purchases.log" "$work/notify-refunds.log"
stored=$(psql -At "$admin" -c "SELECT count(*) FROM notifications")
psql -At "$admin" -c "SELECT type, outcome, count(*) FROM notifications GROUP BY type, outcome ORDER BY type, outcome"
apple_orders=$(psql -At "$admin" -c "SELECT count(*) FROM orders WHERE order_id LIKE 'apple-%'")
apple_keys=$(awk '$2 ~ /^apple-/ {print $1}' "$work/deliveries.log" | sort -u | wc -l)
apple_calls=$(awk '$2 ~ /^apple-/' "$work/deliveries.log" | wc -l)
revoke_calls=$(wc -l < "$work/revokes.log" 2>/dev/null || echo 0)
revoke_keys=$(awk '{print $1}' "$work/revokes.log" 2>/dev/null | sort -u | wc -l)
revoked_rows=$(revoked)
echo "notifications stored: $stored (of $((2 * notify)) posted, each to three hosts); orders from them: $apple_orders"
echo "their deliveries: $apple_calls hook calls, $apple_keys keys; revokes: $revoke_calls hook calls, $revoke_keys keys, $revoked_rows revoked"
echo "revokes by host: $(awk '{print $3}' "$work/revokes.log" 2>/dev/null | sort | uniq -c | tr '\n' ' ')"
echo "history catch-ups skipped because another host held them: $(cat "$work"/daemon-*.log | grep -c notifications.history_held || true)"
[ "$open" -eq 0 ] && [ "$keys_with_two_orders" -eq 0 ] && [ "$orders_with_two_keys" -eq 0 ] && [ "$grants" -eq $((orders + notify)) ] \
    && [ "$stored" -eq $((2 * notify)) ] && [ "$apple_orders" -eq "$notify" ] && [ "$apple_keys" -eq "$notify" ] \
    && [ "$revoke_keys" -eq "$notify" ] && [ "$revoked_rows" -eq "$notify" ] \
    && echo "PASS" || { echo "FAIL"; exit 1; }
