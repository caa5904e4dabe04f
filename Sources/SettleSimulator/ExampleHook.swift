/// The delivery hook `settle simulator --init` writes (docs/backend.md, "The delivery hook"):
/// the contract's shape in a few lines of sh, to read and then replace with your own. It
/// grants once per idempotency key by appending the order's JSON line to grants.jsonl next to
/// it, answers "already granted" (80) for a key it holds, refuses what is not a grant (65),
/// and asks for a retry (75) when it cannot write. It never evaluates its input: the payload
/// is matched as text and written with printf, the key found with a fixed-string grep.
package enum ExampleHook {
    package static let fileName = "hook.sh"
    /// Where it records its grants, next to itself.
    package static let grantsFile = "grants.jsonl"

    package static let script = #"""
        #!/bin/sh
        # Example delivery hook written by `settle simulator --init` (docs/backend.md, "The
        # delivery hook"): grants once per idempotency key by appending the order's JSON to
        # grants.jsonl next to this file. Replace the append with your own grant, keeping the
        # answers: 0 granted, 80 granted before, 75 try again later, 65 refused.
        # It never evaluates its input: the payload is only matched and written out.
        set -u
        grants="$(dirname -- "$0")/grants.jsonl"
        payload=$(cat) || exit 75
        case "$payload" in                    # grant only what says it is a grant
          *'"event":"grant"'*) ;;
          *) echo "not a grant: refused" >&2; exit 65 ;;
        esac
        key=${SETTLE_IDEMPOTENCY_KEY:-}
        [ -n "$key" ] || { echo "no SETTLE_IDEMPOTENCY_KEY: refused" >&2; exit 65; }
        if [ -f "$grants" ] && grep -qF -- "\"idempotency_key\":\"$key\"" "$grants"; then
          echo "already granted: $key"
          exit "${SETTLE_EXIT_ALREADY_GRANTED:-80}"
        fi
        printf '%s\n' "$payload" >> "$grants" || exit 75
        echo "granted $key"
        exit 0

        """#
}
