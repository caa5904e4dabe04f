#!/usr/bin/env bash
# Checks the shipped Prometheus alerting rules with Prometheus's own promtool (Debian's
# prometheus package): `promtool check rules` (syntax, templates), then `promtool test rules`
# with config/settle.rules.test.yml, whose series must fire each alert and must not (steady,
# brief, flapping, shrinking); and the PromQL of every panel of the Grafana dashboard
# (config/settle.grafana.json, read with jq), checked by promtool as recording rules. Prints
# PASS/FAIL lines; exits 1 when anything failed.
#
#   scripts/alert-rules-test.sh
set -euo pipefail
cd "$(dirname "$0")/../config"
command -v promtool >/dev/null || { echo "FAIL alert rules: no promtool (apt-get install prometheus)"; exit 1; }
command -v jq >/dev/null || { echo "FAIL alert rules: no jq (apt-get install jq)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
run() {
    local what=$1 out
    shift
    if out=$("$@" 2>&1); then
        echo "PASS alert rules: $what"
    else
        echo "FAIL alert rules: $what"
        sed 's/^/    | /' <<<"$out"
        failures=$((failures + 1))
    fi
}
run "promtool check rules settle.rules.yml ($(promtool --version 2>&1 | head -n 1 | cut -d' ' -f1-3))" \
    promtool check rules settle.rules.yml
run "promtool test rules settle.rules.test.yml (series that fire and series that must not)" \
    promtool test rules settle.rules.test.yml
# The dashboard's queries as recording rules, its variable ($bundle_id) matching every app.
jq -r '"groups:\n  - name: dashboard\n    rules:",
       (.panels[] | .title as $t | .targets[] | "      - record: dashboard:\($t | ascii_downcase | gsub("[^a-z0-9]+"; "_")):\(.refId)\n        expr: \(.expr | gsub("\\$bundle_id"; ".*") | @json)")' \
    settle.grafana.json > "$work/dashboard.rules.yml"
run "promtool check rules on the $(grep -c 'record:' "$work/dashboard.rules.yml") queries of settle.grafana.json" \
    promtool check rules "$work/dashboard.rules.yml"
[ "$failures" = 0 ]
