#!/bin/sh
# Prints the Swift functions longer than N lines (default 80) under the given folders, longest
# first: "lines  file:line  name". A function's length counts from its `func` line to the line
# of its closing brace. Exits 1 when any is found, so a check can use it as it is.
#
#   scripts/function-lengths.sh [-n N] FOLDER...
#   scripts/function-lengths.sh -n 0 Sources/SettleEngine | head -1   # the longest one
set -eu
limit=80
if [ "${1:-}" = "-n" ]; then
    limit=$2
    shift 2
fi
if [ $# -eq 0 ]; then
    echo "usage: $0 [-n N] FOLDER..." >&2
    exit 64
fi
exec python3 - "$limit" "$@" <<'PYTHON'
import os, re, sys

def code_only(text):
    """The text with comments and string literals blanked (newlines kept), so a brace counts
    only when it is code. Interpolations (\\( ... )) stay code: their quotes nest."""
    out, i, n = [], 0, len(text)
    stack = []  # one entry per open string: (closing quote, raw hashes); ints are interpolation paren depths
    def blank(s):
        return "".join(c if c == "\n" else " " for c in s)
    while i < n:
        in_string = bool(stack) and isinstance(stack[-1], tuple)
        c = text[i]
        if in_string:
            quote, hashes = stack[-1]
            if c == "\\" and text.startswith("#" * hashes + "(", i + 1):
                stack.append(0)
                out.append(" " * (hashes + 2))
                i += hashes + 2
            elif c == "\\" and hashes == 0:
                out.append(blank(text[i:i + 2]))
                i += 2
            elif text.startswith(quote + "#" * hashes, i):
                stack.pop()
                out.append(" " * (len(quote) + hashes))
                i += len(quote) + hashes
            else:
                out.append(blank(c))
                i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(blank(text[i:end]))
            i = end
        elif re.match(r'#*"', text[i:i + 8]):
            hashes = len(text[i:]) - len(text[i:].lstrip("#"))
            quote = '"""' if text.startswith('"""', i + hashes) else '"'
            stack.append((quote, hashes))
            out.append(" " * (hashes + len(quote)))
            i += hashes + len(quote)
        else:
            if stack and c == "(":
                stack[-1] += 1
            elif stack and c == ")":
                if stack[-1] == 0:
                    stack.pop()
                    out.append(" ")
                    i += 1
                    continue
                stack[-1] -= 1
            out.append(c)
            i += 1
    return "".join(out)

FUNC = re.compile(r"\bfunc\s+([^\s(<]+)")

def functions(path):
    with open(path, encoding="utf-8") as f:
        code = code_only(f.read())
    line_of = lambda offset: code.count("\n", 0, offset) + 1
    for match in FUNC.finditer(code):
        # The body is the first `{` outside the signature's parentheses (default arguments may
        # hold closures); a requirement without a body meets a `}` or another declaration first.
        i, parens = match.end(), 0
        while i < len(code):
            c = code[i]
            if c in "([":
                parens += 1
            elif c in ")]":
                parens -= 1
            elif parens == 0 and c == "}":
                break
            elif parens == 0 and c == "{":
                break
            elif parens == 0 and FUNC.match(code, i) and code[i - 1] in " \t\n":
                break
            i += 1
        if i >= len(code) or code[i] != "{":
            continue
        depth = 0
        for j in range(i, len(code)):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    start = line_of(match.start())
                    yield line_of(j) - start + 1, start, match.group(1)
                    break

limit, folders = int(sys.argv[1]), sys.argv[2:]
found = []
for folder in folders:
    paths = [folder] if os.path.isfile(folder) else [
        os.path.join(root, name) for root, _, names in os.walk(folder) for name in names if name.endswith(".swift")]
    for path in sorted(paths):
        found += [(length, path, line, name) for length, line, name in functions(path) if length > limit]
for length, path, line, name in sorted(found, key=lambda f: (-f[0], f[1], f[2])):
    print(f"{length:5}  {path}:{line}  {name}")
sys.exit(1 if found else 0)
PYTHON
