#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for settle's tests: initdb into a temporary folder as an
# unprivileged user, listen on loopback only, create the database, print its URL.
#
#   eval "$(scripts/test-postgres.sh start)"   # exports SETTLE_TEST_POSTGRES_URL
#   swift test
#   scripts/test-postgres.sh stop
#
# The cluster lives in $SETTLE_TEST_POSTGRES_DIR (default /tmp/settle-test-postgres) and
# listens on $SETTLE_TEST_POSTGRES_PORT (default 55432). Authentication is `trust` on
# 127.0.0.1 only: it is a test cluster, never a place for real data.
set -euo pipefail

folder=${SETTLE_TEST_POSTGRES_DIR:-/tmp/settle-test-postgres}
port=${SETTLE_TEST_POSTGRES_PORT:-55432}
# Where it listens (comma-separated addresses) and one more pg_hba.conf line, for the
# multi-host test's namespaces; loopback only by default.
listen=${SETTLE_TEST_POSTGRES_LISTEN:-127.0.0.1}
hba=${SETTLE_TEST_POSTGRES_HBA:-}
url="postgresql://settle@127.0.0.1:$port/settle_test"

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
[ -n "$bindir" ] || bindir=$(dirname "$(command -v initdb || echo /usr/bin/initdb)")
if [ ! -x "$bindir/initdb" ]; then
    echo "PostgreSQL server binaries not found: apt-get install postgresql (Debian/Ubuntu)" >&2
    exit 69
fi

# initdb refuses to run as root: the cluster belongs to an unprivileged user.
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        local owner=postgres
        id "$owner" >/dev/null 2>&1 || owner=nobody
        runuser -u "$owner" -- "$@"
    else
        "$@"
    fi
}

start() {
    if [ -f "$folder/data/postmaster.pid" ] && as_owner "$bindir/pg_ctl" -D "$folder/data" status >/dev/null 2>&1; then
        echo "export SETTLE_TEST_POSTGRES_URL='$url'"
        return
    fi
    rm -rf "$folder"
    mkdir -p "$folder"
    if [ "$(id -u)" -eq 0 ]; then
        owner=postgres
        id "$owner" >/dev/null 2>&1 || owner=nobody
        chown "$owner" "$folder"
    fi
    as_owner "$bindir/initdb" --pgdata="$folder/data" --username=settle --auth=trust --encoding=UTF8 \
        --locale=C.UTF-8 >"$folder/initdb.log" 2>&1 || { cat "$folder/initdb.log" >&2; exit 70; }
    [ -z "$hba" ] || echo "$hba" >> "$folder/data/pg_hba.conf"
    # Loopback and a socket in the cluster's own folder; fsync off: a test cluster trades
    # durability for speed (the tests never crash the server).
    as_owner "$bindir/pg_ctl" -D "$folder/data" -l "$folder/server.log" -w \
        -o "-c listen_addresses=$listen -c port=$port -c unix_socket_directories=$folder -c fsync=off -c max_connections=200" \
        start >&2 || { cat "$folder/server.log" >&2; exit 70; }
    as_owner "$bindir/createdb" -h 127.0.0.1 -p "$port" -U settle settle_test
    echo "export SETTLE_TEST_POSTGRES_URL='$url'"
}

stop() {
    [ -d "$folder/data" ] || return 0
    as_owner "$bindir/pg_ctl" -D "$folder/data" -m immediate stop >&2 || true
    rm -rf "$folder"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    url) echo "$url" ;;
    *) echo "usage: $0 start|stop|url" >&2; exit 64 ;;
esac
