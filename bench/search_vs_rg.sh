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
  -n "fermix startup (list_files, empty dir)" "$FX list_files --json '{\"path\":\"empty\"}'" \
  -n "rg literal" "rg -n -F '$LIT' ." \
  -n "fermix grep literal" "$FX grep --json '{\"patterns\":[\"$LIT\"]}'" \
  -n "fermix content_search literal" "$FX content_search --json '{\"pattern\":\"$LIT\",\"max_results\":1000}'" \
  -n "rg regex" "rg -n '$RX' ." \
  -n "fermix grep regex" "$FX grep --json '{\"patterns\":[\"class \\\\w+Error\\\\(\"]}'" \
  -n "fermix content_search regex" "$FX content_search --json '{\"pattern\":\"class \\\\w+Error\\\\(\",\"regex\":true,\"max_results\":1000}'" \
  -n "fd util" "$FD -t f util" \
  -n "fermix find util" "$FX find --json '{\"query\":\"util\"}'"

"$PY" - "$WORK/search.json" <<'PY'
import json, sys
res = {r["command"]: r["median"] for r in json.load(open(sys.argv[1]))["results"]}
floor = res["fermix startup (list_files, empty dir)"]
def row(name, ref):
    m = res[name]
    r = res[ref]
    print(f"{name:34s} {m*1000:8.1f} ms  {m/r:5.2f}x {ref:9s}  search work {max(m-floor,0)*1000:7.1f} ms ({max(m-floor,0)/r:4.2f}x)")
print(f"{'fermix startup (list_files, empty dir)':34s} {floor*1000:8.1f} ms")
for ref, names in (("rg literal", ["fermix grep literal", "fermix content_search literal"]),
                   ("rg regex", ["fermix grep regex", "fermix content_search regex"]),
                   ("fd util", ["fermix find util"])):
    print(f"{ref:34s} {res[ref]*1000:8.1f} ms")
    for n in names:
        row(n, ref)
PY
