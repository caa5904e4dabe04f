#!/usr/bin/env bash
# Proves the .deb on a machine where nothing else is: builds the package (release build), makes
# a minimal Debian root of this machine's release (mmdebstrap, cached as a tarball under
# /var/cache/settle-ci, or $SETTLE_PACKAGE_TEST_CACHE, for a week), and inside it, through
# chroot, with no Swift toolchain and no -dev package: installs the package with apt-get so its
# dependencies come from Debian, runs the operations guide's package install lines as written,
# then settle -V, man settle, the alert rules and dashboard in place, check-config (78 until the
# secrets exist, 0 after), settle demo, settle status for a member of settle-support and the
# permission message for anyone else, and the lifecycle: upgrade, remove, purge.
# On this machine it installs at most dpkg-dev and mmdebstrap (reading the package lists first
# when there are none); the package itself only goes into the root, which is deleted on exit.
# Prints PASS/FAIL lines; exits 1 when anything failed.
#
#   scripts/package-test.sh [--deb FILE]    (as root; --deb tests a package already built)
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
deb=""
while [ $# -gt 0 ]; do
    case "$1" in
        --deb) deb=$(readlink -f "$2"); shift 2 ;;
        *) echo "package-test: unknown option $1" >&2; exit 64 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "package-test: run as root (chroot, mount)" >&2; exit 77; }

failures=0 passes=0
pass() { echo "PASS package: $*"; passes=$((passes + 1)); }
fail() { echo "FAIL package: $*"; failures=$((failures + 1)); }
# need PACKAGE COMMAND: installs PACKAGE unless COMMAND exists, reading the package lists first
# on a machine that has none yet (a fresh one), without asking anything.
need() {
    command -v "$2" >/dev/null && return
    compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null || apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$1"
}
show() { sed 's/^/    | /' <<<"$1" | tail -n 25; }

work=$(mktemp -d /tmp/settle-package-test-XXXXXX)
root=$work/root
cleanup() {
    umount "$root/proc" 2>/dev/null || umount -l "$root/proc" 2>/dev/null || true
    if grep -q " $root/" /proc/mounts; then
        echo "package-test: something is still mounted under $root; not deleting it" >&2
    else
        rm -rf --one-file-system "$work"
    fi
}
trap cleanup EXIT

# The package.
if [ -z "$deb" ]; then
    need dpkg-dev dpkg-shlibdeps
    scripts/package-deb "$work" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "scripts/package-deb builds the package"; exit 1; }
    deb=$(echo "$work"/settle_*.deb)
fi
pass "built $(basename "$deb") ($((SECONDS - started)) s): Depends: $(dpkg-deb -f "$deb" Depends)"
built=$SECONDS

# The root: this machine's Debian release, minimal (Essential, apt) plus man-db.
. /etc/os-release
arch=$(dpkg --print-architecture)
cache_folder=${SETTLE_PACKAGE_TEST_CACHE:-/var/cache/settle-ci}
cache=$cache_folder/debian-$VERSION_CODENAME-$arch.tar
if [ ! -s "$cache" ] || [ -n "$(find "$cache" -mtime +7)" ]; then
    need mmdebstrap mmdebstrap
    install -d "$cache_folder"
    # --format=tar: mmdebstrap otherwise picks the format from the name's extension, and the
    # temporary name's (.new.PID) is none, so it made a folder where the tarball belongs.
    mmdebstrap --quiet --format=tar --variant=minbase --include=man-db --skip=cleanup/apt/lists \
        "$VERSION_CODENAME" "$cache.new.$$" \
        "deb http://deb.debian.org/debian $VERSION_CODENAME main" \
        "deb http://deb.debian.org/debian $VERSION_CODENAME-updates main" \
        "deb http://deb.debian.org/debian-security $VERSION_CODENAME-security main"
    mv "$cache.new.$$" "$cache"
    pass "made the Debian root $cache ($(du -h "$cache" | cut -f1))"
fi
mkdir "$root"
tar -C "$root" -xpf "$cache"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The operator's "yes" to apt's questions (the guide's apt-get lines are typed at a terminal),
# so they run as written with nobody there to answer.
printf 'APT::Get::Assume-Yes "true";\n' > "$root/etc/apt/apt.conf.d/90settle-ci"
mount -t proc proc "$root/proc"

# Runs bash code in the root, with a clean environment; its output in $out, its status in $status.
in_root() {
    status=0
    out=$(chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive \
        APP_SHARED_SECRET=ci-test-shared-secret WEBHOOK_SECRET=ci-test-webhook-secret \
        /bin/bash -c "cd /root/install && $1" 2>&1) || status=$?
}
# expect CODE WHAT CODE-IN-ROOT [TEXT-THE-OUTPUT-MUST-HOLD...]
expect() {
    local code=$1 what=$2 script=$3 text missing=""
    shift 3
    in_root "$script"
    for text in "$@"; do
        grep -qF -- "$text" <<<"$out" || missing+=" '$text'"
    done
    if [ "$status" = "$code" ] && [ -z "$missing" ]; then
        pass "$what"
    else
        fail "$what: exit $status (expected $code)${missing:+, output lacks$missing}"
        show "$out"
    fi
}

install -d "$root/root/install"
cp "$deb" "$root/root/install/"
version=$(dpkg-deb -f "$deb" Version)
expect 0 "apt-get update in the fresh $PRETTY_NAME root" "apt-get update -q"
expect 0 "the root has no Swift toolchain and no -dev package" \
    "dev=\$(dpkg-query -W -f '\${db:Status-Status} \${Package}\n' | awk '\$1 == \"installed\" && \$2 ~ /-dev\$/'); echo \"-dev packages: \${dev:-none}\"; [ -z \"\$dev\" ] && ! command -v swift swiftc clang && [ ! -e /usr/include/sqlite3.h ]" \
    "-dev packages: none"

# What the guide's package lines need around them: a test key file, a test hook at the example's
# path, and an `editor` that makes the administrator's edit (a changed interval) without a person.
cp config/AppleRootCA-G3.pem "$root/root/install/AuthKey_2X9R4HXF34.p8"
install -d "$root/usr/local/bin"
cat > "$root/usr/local/bin/grant-goods" <<'HOOK'
#!/bin/sh
cat >> /var/lib/settle/granted.jsonl
HOOK
cat > "$root/usr/local/bin/editor" <<'EDITOR'
#!/bin/sh
sed -i 's/"interval_seconds": 60/"interval_seconds": 61/' "$1"
EDITOR
chmod 755 "$root/usr/local/bin/grant-goods" "$root/usr/local/bin/editor"

# The operations guide's lines, as written.
guide=docs/operations.md
mapfile -t lines < <(scripts/readme-commands --file "$guide" "Install and run the daemon")
[ "${#lines[@]}" -ge 5 ] || fail "$guide: the install section's package commands were not found"
for line in "${lines[@]}"; do
    case "$line" in
        systemctl*)
            echo "NOT RUN package: $guide line '$line' (a chroot has no systemd; .ci/run checks the units with systemd-analyze)"
            continue ;;
    esac
    expect 0 "$guide: $line" "$line"
    if [[ "$line" == "apt-get install ./settle_"* ]]; then
        # The freshly installed package, before anything is configured.
        expect 0 "settle -V runs without the toolchain" "settle -V" "settle $version"
        expect 0 "settle's libraries all resolve" "! ldd /usr/bin/settle | grep 'not found'"
        expect 0 "man settle resolves" "man -w settle && MANPAGER=cat man settle | head -n 20" "/usr/share/man/man1/settle.1.gz" "settle"
        expect 0 "the alert rules and the Grafana dashboard are in /usr/share/settle, as shipped in config/" \
            "dpkg -L settle | grep '^/usr/share/settle/' && sha256sum /usr/share/settle/settle.rules.yml /usr/share/settle/settle.grafana.json" \
            "/usr/share/settle/settle.rules.yml" "/usr/share/settle/settle.grafana.json" \
            "$(sha256sum config/settle.rules.yml | cut -d' ' -f1)" "$(sha256sum config/settle.grafana.json | cut -d' ' -f1)"
        expect 0 "the guides are in /usr/share/doc/settle/docs" "ls /usr/share/doc/settle/README.md /usr/share/doc/settle/docs/operations.md" \
            "/usr/share/doc/settle/docs/operations.md"
        expect 0 "the user settle and the group settle-support exist" \
            "getent passwd settle && getent group settle-support && [ \"\$(id -gn settle)\" = settle-support ]"
        expect 0 "/var/lib/settle is settle:settle-support 0750 and /etc/settle/credentials root-only" \
            "stat -c '%U:%G %a' /var/lib/settle /etc/settle/credentials" "settle:settle-support 750" "root:root 700"
        expect 78 "check-config on the shipped example exits 78 saying where the missing secret goes" \
            "settle check-config" "put the secret in /etc/settle/credentials/shared-secret"
    fi
done
expect 0 "dpkg-reconfigure settle listed the secrets present for systemd" \
    "cat /etc/systemd/system/settle.service.d/credentials.conf" \
    "LoadCredential=shared-secret:/etc/settle/credentials/shared-secret" \
    "LoadCredential=appstore-key.p8:/etc/settle/credentials/appstore-key.p8"
expect 0 "check-config passes with the test secrets, secrets redacted" \
    "settle check-config && ! settle check-config | grep -q ci-test-shared-secret" "(contents redacted)"
expect 0 "settle demo completes" "settle demo"

# The ledger, made by the user settle as the unit would (UMask=0027), read by support.
expect 0 "settle enqueue as the user settle creates the ledger" \
    "echo 'Y2kgdGVzdCByZWNlaXB0' > /tmp/receipt.b64 && umask 027 && runuser -u settle -- settle enqueue --order o-ci-1 --user u-1 --product com.example.game.coins100 --receipt-file /tmp/receipt.b64 && ls -l /var/lib/settle/ledger.sqlite3"
expect 0 "settle status by a member of settle-support reads the ledger" \
    "useradd --create-home alice && usermod -aG settle-support alice && runuser -u alice -- settle status" "o-ci-1"
expect 74 "settle status by a user outside settle-support gets the permission message" \
    "useradd --create-home bob && runuser -u bob -- settle status" "permission denied" "join the settle-support group"

# The lifecycle: the same package over itself, a newer version of it, remove, purge.
in_root "sha256sum /etc/settle/settle.json /var/lib/settle/ledger.sqlite3"
before=$out
expect 0 "apt-get install --reinstall of the same package keeps /etc/settle/settle.json (edited), the secrets and the ledger" \
    "apt-get install --reinstall ./settle_${version}_$arch.deb && [ \"\$(sha256sum /etc/settle/settle.json /var/lib/settle/ledger.sqlite3)\" = '$before' ] && ls /etc/settle/credentials/shared-secret"
newer=$work/newer
dpkg-deb -R "$deb" "$newer"
sed -i "s/^Version: .*/Version: $version+ci1/" "$newer/DEBIAN/control"
dpkg-deb --root-owner-group --build "$newer" "$root/root/install/settle_${version}+ci1_$arch.deb" >/dev/null
expect 0 "upgrade to $version+ci1 with apt-get install" "apt-get install ./settle_${version}+ci1_$arch.deb && dpkg-query -W -f '\${Version}' settle" "$version+ci1"
expect 0 "the upgrade kept /etc/settle/settle.json (edited) and the ledger" \
    "grep -q '\"interval_seconds\": 61' /etc/settle/settle.json && [ \"\$(sha256sum /etc/settle/settle.json /var/lib/settle/ledger.sqlite3)\" = '$before' ] && runuser -u alice -- settle status" "o-ci-1"
expect 0 "apt-get remove settle removes the program" "apt-get remove settle && ! command -v settle && dpkg -s settle | grep '^Status'" "deinstall ok config-files"
expect 0 "remove kept the configuration, the secrets and the ledger" \
    "[ \"\$(sha256sum /etc/settle/settle.json /var/lib/settle/ledger.sqlite3)\" = '$before' ] && ls /etc/settle/credentials/shared-secret"
expect 0 "apt-get purge settle removes /etc/settle and says what it keeps" "apt-get purge settle && ! ls /etc/settle" \
    "purged /etc/settle" "kept /var/lib/settle (the ledger"
expect 0 "purge kept the ledger, the user and the group" \
    "[ -f /var/lib/settle/ledger.sqlite3 ] && getent passwd settle && getent group settle-support"
expect 0 "installed again after the purge, settle reads the ledger it kept" \
    "apt-get install ./settle_${version}_$arch.deb && runuser -u alice -- settle status" "o-ci-1"

echo "package test: $passes passed, $failures failed; build $((built - started)) s, root and checks $((SECONDS - built)) s, total $((SECONDS - started)) s"
[ "$failures" = 0 ]
