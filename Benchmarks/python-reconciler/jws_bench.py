#!/usr/bin/env python3
"""StoreKit 2 JWS verifications per CPU-second with Apple's own Python library
(app-store-server-library), offline, for settle-bench to print side by side.

Usage: jws_bench.py --token FILE --root DER_FILE --kind renewal|transaction
                    --bundle-id ID --environment Sandbox|Production [--seconds S] [--max N]
Prints one JSON line: {"verified": n, "cpu_seconds": s, "per_cpu_second": r}.
"""
import argparse
import json
import resource
import sys

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, _ChainVerifier


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--token", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--kind", choices=["renewal", "transaction"], required=True)
    parser.add_argument("--bundle-id", required=True)
    parser.add_argument("--environment", choices=["Sandbox", "Production"], required=True)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--max", type=int, default=100_000)
    args = parser.parse_args()

    token = open(args.token).read().strip()
    root = open(args.root, "rb").read()
    environment = Environment.SANDBOX if args.environment == "Sandbox" else Environment.PRODUCTION
    verifier = SignedDataVerifier([root], False, environment, args.bundle_id, app_apple_id=1234)
    # Apple's test PKI has no key identifiers, which OpenSSL's strict mode refuses; Apple's
    # own tests of this library turn strict checks off for it the same way.
    verifier._chain_verifier = _ChainVerifier([root], enable_strict_checks=False)
    verify = verifier.verify_and_decode_renewal_info if args.kind == "renewal" else verifier.verify_and_decode_signed_transaction

    verify(token)  # fails loudly if the token does not verify at all
    count = 0
    start = cpu_seconds()
    while count < args.max and cpu_seconds() - start < args.seconds:
        verify(token)
        count += 1
    spent = cpu_seconds() - start
    print(json.dumps({"verified": count, "cpu_seconds": spent, "per_cpu_second": count / spent if spent > 0 else 0}))


if __name__ == "__main__":
    sys.exit(main())
