#!/usr/bin/env bash
# grep and content_search against ripgrep, find against fd, on >= 50 MB of copies of the stdlib.
# One hyperfine run; medians and ratios are printed at the end.
#
# Usage: bench/search_vs_rg.sh [hyperfine args...]
# Needs: hyperfine, rg, fdfind (or fd). COPIES (default 2) sets how many copies of Lib/ to make.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=$(python3 -c 'import sys; print(sys.executable)')  # the real interpreter, not a pyenv shim
LIB=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
FD=$(command -v fdfind || command -v fd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The tree lives inside a fake home so the default sandbox (standard mode) roots it as the cwd.
export HOME="$WORK/home" FERMIX_HOME="$WORK/fermix" PYTHONPATH="$REPO" PYDANTIC_DISABLE_PLUGINS=__all__
TREE="$HOME/tree"
mkdir -p "$TREE/empty"
for i in $(seq 1 "${COPIES:-2}"); do
  mkdir -p "$TREE/copy$i"
  (cd "$LIB" && tar cf - --exclude=site-packages --exclude=__pycache__ --exclude='config-*' \
     --exclude=lib-dynload --exclude='*.whl' .) | tar xf - -C "$TREE/copy$i"
done
cd "$TREE"
MB=$(du -sm . | cut -f1)
FILES=$(find . -type f | wc -l)
echo "tree: $MB MB, $FILES files (${COPIES:-2} copies of $LIB)"
[ "$MB" -ge 50 ] || { echo "tree is under 50 MB; raise COPIES" >&2; exit 1; }

FX="$PY -m fermix_cli tool"
LIT='frozenset('
RX='class \w+Error\('
# content_search stops at max_results (at most 1000); both patterns match fewer lines than that, so
# every tool reads the whole tree.
echo "matching lines: literal $(rg -F -c "$LIT" . | awk -F: '{s+=$2} END {print s}'), regex $(rg -c "$RX" . | awk -F: '{s+=$2} END {print s}')"

hyperfine -N --warmup 2 --runs "${RUNS:-10}" --export-json "$WORK/search.json" "$@" \
  -n "rg literal" "rg -n -F '$LIT' ." \
  -n "fermix grep literal" "$FX grep --json '{\"patterns\":[\"$LIT\"]}'" \
  -n "fermix content_search literal" "$FX content_search --json '{\"pattern\":\"$LIT\",\"max_results\":1000}'" \
  -n "rg regex" "rg -n '$RX' ." \
  -n "fermix grep regex" "$FX grep --json '{\"patterns\":[\"class \\\\w+Error\\\\(\"]}'" \
  -n "fermix content_search regex" "$FX content_search --json '{\"pattern\":\"class \\\\w+Error\\\\(\",\"regex\":true,\"max_results\":1000}'" \
  -n "fd util" "$FD -t f util" \
  -n "fermix find util" "$FX find --json '{\"query\":\"util\"}'" \
  -n "fermix startup (list_files, empty dir)" "$FX list_files --json '{\"path\":\"empty\"}'"

# The same calls in-process (registry.invoke, median of 7 after one warm-up): the search work
# without interpreter and import start-up (the fermix start-up row above is that cost on its own).
"$PY" - "$WORK/search.json" "$LIT" "$RX" <<'PY'
import json, statistics, sys, time
from fermix_cli.core.context import ToolContext
from fermix_cli.core.registry import default_registry

res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
lit, rx = sys.argv[2], sys.argv[3]
reg = default_registry()
ctx = ToolContext.for_cli()
calls = {
    "fermix grep literal": ("grep", {"patterns": [lit]}),
    "fermix content_search literal": ("content_search", {"pattern": lit, "max_results": 1000}),
    "fermix grep regex": ("grep", {"patterns": [rx]}),
    "fermix content_search regex": ("content_search", {"pattern": rx, "regex": True, "max_results": 1000}),
    "fermix find util": ("find", {"query": "util"}),
}
inproc = {}
for name, (tool, args) in calls.items():
    reg.invoke(tool, args, ctx)
    times = []
    for _ in range(7):
        t = time.perf_counter()
        reg.invoke(tool, args, ctx)
        times.append(time.perf_counter() - t)
    inproc[name] = statistics.median(times)

def ms(x):
    return f"{x * 1000:7.1f} ms"

print(f"\n{'command':38s} {'median (CLI)':>12s} {'ratio':>7s} {'in-process':>11s} {'ratio':>7s}")
startup = res["fermix startup (list_files, empty dir)"]["median"]
print(f"{'fermix startup (list_files, empty dir)':38s} {ms(startup):>12s}")
for ref, names in (("rg literal", ["fermix grep literal", "fermix content_search literal"]),
                   ("rg regex", ["fermix grep regex", "fermix content_search regex"]),
                   ("fd util", ["fermix find util"])):
    r = res[ref]["median"]
    print(f"{ref:38s} {ms(r):>12s}")
    for n in names:
        m = res[n]["median"]
        print(f"{n:38s} {ms(m):>12s} {m / r:6.2f}x {ms(inproc[n]):>11s} {inproc[n] / r:6.2f}x")
PY
