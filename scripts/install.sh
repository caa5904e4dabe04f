#!/usr/bin/env bash
# Installs settle on this machine as docs/operations.md ("From a checkout") describes, in one
# step: the static user settle and the group settle-support, the binary (built here unless
# --binary), the man page, shell completions, the guides (docs/), the Prometheus alert rules and
# the Grafana dashboard (PREFIX/share/settle), the systemd units, the configuration folder with
# Apple's roots and the example configuration (never overwriting an existing one), and a
# credentials drop-in listing exactly the secret files present in /etc/settle/credentials.
#
#   sudo scripts/install.sh [--binary PATH] [--prefix /usr/local] [--root DIR] [--no-systemd]
#
# --root installs into DIR instead of / (used by scripts/package-deb and the tests); users,
# groups and systemctl are then left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=/usr/local root="" binary="" systemd=yes
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary=$2; shift 2 ;;
        --prefix) prefix=$2; shift 2 ;;
        --root) root=$2; shift 2 ;;
        --no-systemd) systemd=no; shift ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
done

if [ -z "$binary" ]; then
    # The commit goes into the binary for `settle --version`; the source file is restored after.
    commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
    trap 'git checkout -- Sources/SettleApp/Support/BuildCommit.swift 2>/dev/null || true' EXIT
    printf '/// Written by scripts/install.sh for this build.\nlet buildCommit = "%s"\n' "$commit" \
        > Sources/SettleApp/Support/BuildCommit.swift
    swift build -c release --static-swift-stdlib --product settle
    binary="$(swift build -c release --show-bin-path)/settle"
fi

if [ -z "$root" ] && [ "$(id -u)" -ne 0 ]; then
    echo "install.sh: run as root (sudo), or give --root DIR" >&2
    exit 77
fi

if [ -z "$root" ]; then
    getent group settle-support >/dev/null || groupadd --system settle-support
    getent passwd settle >/dev/null || useradd --system --gid settle-support --home-dir /var/lib/settle \
        --no-create-home --shell /usr/sbin/nologin --comment "settle daemon" settle
fi

install -D -m 755 "$binary" "$root$prefix/bin/settle"
settle="$root$prefix/bin/settle"
install -d -m 755 "$root$prefix/share/man/man1" "$root$prefix/share/bash-completion/completions" \
    "$root$prefix/share/zsh/site-functions" "$root/usr/share/doc/settle/docs" "$root$prefix/share/settle"
"$settle" --generate-manual > "$root$prefix/share/man/man1/settle.1"
"$settle" --generate-completion-script bash > "$root$prefix/share/bash-completion/completions/settle"
"$settle" --generate-completion-script zsh > "$root$prefix/share/zsh/site-functions/_settle"
install -m 644 README.md CHANGELOG.md SECURITY.md LICENSE config/settle.example.json "$root/usr/share/doc/settle/"
install -m 644 docs/*.md "$root/usr/share/doc/settle/docs/"
# Not configuration (Prometheus and Grafana read them from here, or an operator copies them).
install -m 644 config/settle.rules.yml config/settle.grafana.json "$root$prefix/share/settle/"

install -d -m 755 "$root/etc/settle"
install -d -m 700 "$root/etc/settle/credentials"
install -m 644 config/AppleRootCA-G3.pem config/AppleIncRootCA.pem "$root/etc/settle/"
[ -e "$root/etc/settle/settle.json" ] || install -m 644 config/settle.example.json "$root/etc/settle/settle.json"

units="$root/etc/systemd/system"
[ "$prefix" = /usr/local ] || units="$root/lib/systemd/system"
install -d -m 755 "$units"
for unit in systemd/*.service systemd/*.timer systemd/*.socket; do
    sed "s#/usr/local/bin/settle#$prefix/bin/settle#g" "$unit" > "$units/$(basename "$unit")"
    chmod 644 "$units/$(basename "$unit")"
done

# LoadCredential= fails a unit whose file is missing: list only the secrets that exist.
write_credentials() {
    local dropin="$units/$1.d" folder="$2" lines=""
    for file in "$root$folder"/*; do
        [ -f "$file" ] && lines+="LoadCredential=$(basename "$file"):$folder/$(basename "$file")"$'\n'
    done
    install -d -m 755 "$dropin"
    printf '# Written by scripts/install.sh: the files in %s. Run it again after adding one.\n[Service]\n%s' \
        "$folder" "$lines" > "$dropin/credentials.conf"
}
write_credentials settle.service /etc/settle/credentials
write_credentials settle-reconcile.service /etc/settle/credentials
write_credentials settle-web.service /etc/settle/credentials

if [ -z "$root" ] && [ "$systemd" = yes ] && command -v systemctl >/dev/null; then
    systemctl daemon-reload
fi
echo "installed settle $("$settle" --version | head -n 1 | cut -d' ' -f2) in $root$prefix/bin; next: edit /etc/settle/settle.json, put secrets in /etc/settle/credentials, settle check-config, systemctl enable --now settle"
