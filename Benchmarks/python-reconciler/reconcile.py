#!/usr/bin/env python3
"""A reconciler of the kind a team writes by hand, for settle-bench to run side by side
with settle: Python 3, sqlite3, requests, subprocess and a pool of threads, over settle's
own ledger schema, against the same fake Apple and the same hook.

It does what settle's pass does for a verifyReceipt order, in the obvious way: claim the
order (state 'verifying', committed), ask Apple, check bundle, product and transaction,
record the verified purchase (state 'delivering', committed), run the hook (or POST the
webhook), and record the outcome (state 'finished', committed). WAL and synchronous=FULL,
as settle, so both pay the same fsyncs.

Usage: reconcile.py --ledger PATH --apple-url URL --secret-file PATH --bundle-id ID
                    (--hook CMD [ARG...] | --webhook-url URL --webhook-secret-file PATH)
                    [--concurrency 32] [--max-seconds 900]
Prints one JSON line: settled/failed counts, wall seconds and this process's own CPU
seconds (hook processes excluded: RUSAGE_SELF does not count children).
"""
import argparse
import hashlib
import hmac
import json
import os
import queue
import resource
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import requests


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def connect(path):
    db = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA busy_timeout=60000")
    return db


class Reconciler:
    def __init__(self, args):
        self.args = args
        self.secret = open(args.secret_file).read().strip()
        self.webhook_secret = open(args.webhook_secret_file).read().strip() if args.webhook_secret_file else None
        self.db = connect(args.ledger)
        self.db_lock = threading.Lock()  # one connection, one writer at a time
        self.local = threading.local()
        self.settled = 0
        self.failed = 0
        self.count_lock = threading.Lock()
        self.deadline = time.monotonic() + args.max_seconds

    def write(self, sql, params):
        with self.db_lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                cursor = self.db.execute(sql, params)
                self.db.execute("COMMIT")
                return cursor.rowcount
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def session(self):
        if not hasattr(self.local, "session"):
            self.local.session = requests.Session()
        return self.local.session

    def due_orders(self):
        with self.db_lock:
            return self.db.execute(
                "SELECT o.order_id, o.user_id, o.product_id, o.transaction_id, r.data FROM orders o "
                "JOIN receipts r ON r.sha256 = o.receipt_sha256 "
                "WHERE o.state = 'pending' AND o.next_attempt_at <= ? ORDER BY o.next_attempt_at",
                (int(time.time()),)).fetchall()

    def verify(self, receipt):
        body = {"receipt-data": receipt, "password": self.secret, "exclude-old-transactions": False}
        answer = self.session().post(self.args.apple_url, json=body, timeout=30).json()
        if answer.get("status") == 21007 and self.args.sandbox_url:
            answer = self.session().post(self.args.sandbox_url, json=body, timeout=30).json()
        return answer

    def deliver(self, payload):
        body = json.dumps(payload).encode()
        if self.args.webhook_url:
            stamp = str(int(time.time()))
            mac = hmac.new(self.webhook_secret.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
            response = self.session().post(self.args.webhook_url, data=body, timeout=30, headers={
                "Content-Type": "application/json", "Idempotency-Key": payload["idempotency_key"],
                "Settle-Signature": f"t={stamp},v1={mac}"})
            # As settle: a 2xx counts only when the receiver names the key it granted.
            key = payload["idempotency_key"]
            if not 200 <= response.status_code < 300:
                return False
            if response.headers.get("Settle-Granted", "").strip() == key:
                return True
            try:
                answer = response.json()
            except ValueError:
                return False
            return isinstance(answer, dict) and answer.get("idempotency_key") == key
        result = subprocess.run(self.args.hook, input=body, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        return result.returncode == 0

    def settle(self, order):
        order_id, user_id, product_id, transaction_id, receipt = order
        now = int(time.time())
        claimed = self.write(
            "UPDATE orders SET state='verifying', lease_host=?, lease_pid=?, lease_start='python', lease_expires_at=?, "
            "attempts=attempts+1, updated_at=? WHERE order_id=? AND state='pending'",
            (socket.gethostname(), os.getpid(), now + 300, now, order_id))
        if claimed != 1:
            return False
        answer = self.verify(receipt)
        purchase = None
        if answer.get("status") == 0 and answer.get("receipt", {}).get("bundle_id") == self.args.bundle_id:
            for item in answer["receipt"].get("in_app", []):
                if item.get("transaction_id") == transaction_id and item.get("product_id") == product_id:
                    purchase = item
        if purchase is None:
            self.write("UPDATE orders SET state='needs_attention', reason='no_match', lease_host=NULL, lease_pid=NULL, "
                       "lease_start=NULL, lease_expires_at=NULL, updated_at=? WHERE order_id=?", (now, order_id))
            return False
        environment = answer.get("environment", "Production")
        self.write(
            "UPDATE orders SET state='delivering', environment=?, verified_transaction_id=?, original_transaction_id=?, "
            "verified_product_id=?, quantity=?, purchase_date_ms=?, grant_key=?, updated_at=? WHERE order_id=?",
            (environment, purchase["transaction_id"], purchase.get("original_transaction_id"), product_id,
             int(purchase.get("quantity", "1")), int(purchase.get("purchase_date_ms", "0")), purchase["transaction_id"],
             int(time.time()), order_id))
        payload = {"order_id": order_id, "user_id": user_id, "product_id": product_id, "product_type": "consumable",
                   "quantity": int(purchase.get("quantity", "1")), "grant": None,
                   "transaction_id": purchase["transaction_id"],
                   "original_transaction_id": purchase.get("original_transaction_id"), "environment": environment,
                   "purchase_date": purchase.get("purchase_date"), "expires_date": None,
                   "idempotency_key": purchase["transaction_id"]}
        if not self.deliver(payload):
            self.write("UPDATE orders SET state='pending', next_attempt_at=?, lease_host=NULL, lease_pid=NULL, "
                       "lease_start=NULL, lease_expires_at=NULL, updated_at=? WHERE order_id=?",
                       (int(time.time()) + 60, int(time.time()), order_id))
            return False
        done = int(time.time())
        with self.db_lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.execute("UPDATE orders SET state='finished', finished_at=?, lease_host=NULL, lease_pid=NULL, "
                                "lease_start=NULL, lease_expires_at=NULL, updated_at=? WHERE order_id=?",
                                (done, done, order_id))
                self.db.execute("INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at) "
                                "VALUES (?, ?, ?, 'settle', ?)", (purchase["transaction_id"], purchase["transaction_id"],
                                                                  order_id, done))
                self.db.execute("INSERT INTO history(order_id, at, kind, outcome, hook_exit) "
                                "VALUES (?, ?, 'delivery', 'delivered', 0)", (order_id, done))
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
        return True

    def worker(self, work):
        while time.monotonic() < self.deadline:
            try:
                order = work.get_nowait()
            except queue.Empty:
                return
            try:
                ok = self.settle(order)
            except Exception as error:  # one bad order must not stop the pass
                print(f"order {order[0]}: {error}", file=sys.stderr)
                ok = False
            with self.count_lock:
                if ok:
                    self.settled += 1
                else:
                    self.failed += 1

    def run(self):
        work = queue.Queue()
        for order in self.due_orders():
            work.put(order)
        threads = [threading.Thread(target=self.worker, args=(work,)) for _ in range(self.args.concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def context_switches():
    """Voluntary context switches of this process's threads so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw


def io_counters():
    """Bytes handed to write(2)/pwrite(2) and bytes that reached the block layer (/proc/self/io)."""
    counters = {"wchar": 0, "write_bytes": 0}
    with open("/proc/self/io") as io:
        for line in io:
            name, _, value = line.partition(":")
            if name in counters:
                counters[name] = int(value)
    return counters


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ledger", required=True)
    parser.add_argument("--apple-url", required=True)
    parser.add_argument("--sandbox-url")
    parser.add_argument("--secret-file", required=True)
    parser.add_argument("--bundle-id", required=True)
    parser.add_argument("--webhook-url")
    parser.add_argument("--webhook-secret-file")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-seconds", type=float, default=900)
    parser.add_argument("--hook", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if bool(args.hook) == bool(args.webhook_url):
        parser.error("exactly one of --hook or --webhook-url is required")

    reconciler = Reconciler(args)
    wall_start, cpu_start, io_start = time.monotonic(), cpu_seconds(), io_counters()
    switches_start = context_switches()
    reconciler.run()
    wall, cpu, io = time.monotonic() - wall_start, cpu_seconds() - cpu_start, io_counters()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"settled": reconciler.settled, "failed": reconciler.failed, "wall": wall, "cpu": cpu,
                      "maxrss_kib": peak_kib, "wchar": io["wchar"] - io_start["wchar"],
                      "write_bytes": io["write_bytes"] - io_start["write_bytes"],
                      "context_switches": context_switches() - switches_start}))


if __name__ == "__main__":
    sys.exit(main())
