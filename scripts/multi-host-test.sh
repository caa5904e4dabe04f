#!/usr/bin/env bash
# Several hosts, one PostgreSQL ledger: three `settle run`, each in its own network namespace
# with its own host name (ip netns, a veth pair, unshare --uts), its own local Apple simulator
# (on the namespace's loopback), and one PostgreSQL reached over the veths. ORDERS orders
# (default 2000); once a tenth are finished, host 1 is SIGKILLed and host 2's veth is downed for
# longer than a lease, then brought back. Checks: every order finished, no purchase granted
# under two keys or to two orders, host 2's late writes refused and its queued deliveries not
# started once taken over (order.lease_lost logged), nothing stuck. Needs root (namespaces); all traffic stays on this machine.
#
#   scripts/multi-host-test.sh            # ORDERS=2000 by default
#   BENCH=1 scripts/multi-host-test.sh    # throughput of 1, 2 and 3 daemons instead
set -euo pipefail
cd "$(dirname "$0")/.."

orders=${ORDERS:-2000}
port=${SETTLE_MULTIHOST_PORT:-55499}
work=$(mktemp -d /tmp/settle-multihost-XXXXXX)
chmod 755 "$work"
swift build >/dev/null
settle="$(swift build --show-bin-path)/settle"
pids=()

cleanup() {
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    for i in 1 2 3; do ip netns del "settle-h$i" 2>/dev/null || true; ip link del "vh$i" 2>/dev/null || true; done
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
done

# One PostgreSQL, listening on loopback and on this side of each veth.
export SETTLE_TEST_POSTGRES_DIR="$work/pg" SETTLE_TEST_POSTGRES_PORT=$port
export SETTLE_TEST_POSTGRES_LISTEN="127.0.0.1,10.77.1.1,10.77.2.1,10.77.3.1"
export SETTLE_TEST_POSTGRES_HBA="host all all 10.77.0.0/16 trust"
eval "$(scripts/test-postgres.sh start 2>/dev/null)"
admin=$SETTLE_TEST_POSTGRES_URL

# Apple: the same scripted receipts in every host's simulator (each answers from its own loopback).
python3 - "$work" "$orders" <<'EOF'
import base64, json, sys
work, n = sys.argv[1], int(sys.argv[2])
receipts = [{"receipt_data": base64.b64encode(f"multihost receipt {i}".encode()).decode(), "environment": "Production",
             "in_app": [{"product_id": "com.example.game.coins100", "transaction_id": f"{3000000000000000 + i}"}]}
            for i in range(n)]
json.dump({"receipts": receipts}, open(f"{work}/plans.json", "w"))
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
# The StoreKit anchor settle loads next to its configuration (receipts need no more).
cp Tests/SettleCoreTests/Fixtures/apple/roots/AppleRootCA-G3.pem "$work/"
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
  "products": {"com.example.game.coins100": {"type": "consumable"}},
  "delivery": {"command": ["$work/grant.sh"], "timeout_seconds": 5},
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
until [ "$(finished)" -ge $((orders / 10)) ]; do
    kill -0 "${daemon[3]}" 2>/dev/null || { echo "FAIL: host-3's daemon exited"; tail -n 5 "$work/daemon-3.log"; exit 1; }
    sleep 0.1
done
echo "$(finished) finished: SIGKILL host-1, cut host-2 off for 80 s (leases: delivery 65 s, verify 70 s)"
kill -KILL "${daemon[1]}"
ip link set vh2 down
sleep 80
ip link set vh2 up
echo "host-2 is back; waiting for every order"
deadline=$(( $(date +%s) + 600 ))
until [ "$(psql -At "$admin" -c "SELECT count(*) FROM orders WHERE state NOT IN ('finished','rejected','needs_attention')")" -eq 0 ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "FAIL: orders still open after 10 minutes"; break; }
    sleep 1
done
ended=$(date +%s)
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
[ "$open" -eq 0 ] && [ "$keys_with_two_orders" -eq 0 ] && [ "$orders_with_two_keys" -eq 0 ] && [ "$grants" -eq "$orders" ] \
    && echo "PASS" || { echo "FAIL"; exit 1; }
