#!/usr/bin/env bash
# Cold start of one machine call: fermix.pyz against the installed console script and `python -c pass`,
# measured in one hyperfine run. The console script is installed from this checkout into a throwaway
# virtualenv (dependencies from the current Python's site-packages), so both run the same code.
# Usage: bench/pyz_startup.sh [hyperfine args...]   (needs hyperfine; builds dist/fermix.pyz if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=$(python3 -c 'import sys; print(sys.executable)')
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

PYZ=${FERMIX_PYZ:-$REPO/dist/fermix.pyz}
[ -f "$PYZ" ] || "$PY" -m fermix_cli.build pyz
"$PY" -m venv --system-site-packages "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --no-deps --disable-pip-version-check "$REPO"
FERMIX=$WORK/venv/bin/fermix

export HOME=$WORK/home FERMIX_HOME=$WORK/home/.fermix
mkdir -p "$HOME"
ARGS='{"path":"bench.txt"}'
# From the home a relative path means the fermix workspace (from the checkout it would be refused).
(cd "$HOME" && "$FERMIX" tool file_write --json '{"path":"bench.txt","content":"hello\nworld\n"}' >/dev/null)

# The pyz's first run extracts its packages into ~/.cache/fermix/pyz; time that once, apart.
start=$(date +%s%N)
"$PYZ" tool file_read --json "$ARGS" >/dev/null
echo "fermix.pyz first run (extracts once): $(( ($(date +%s%N) - start) / 1000000 )) ms"

cd "$WORK"
hyperfine --warmup 5 --runs "${RUNS:-40}" -N --export-json "$WORK/pyz.json" "$@" \
  -n "python -c pass" "$PY -c pass" \
  -n "fermix (console script)" "$FERMIX tool file_read --json '$ARGS'" \
  -n "fermix.pyz" "$PYZ tool file_read --json '$ARGS'"
"$PY" - "$WORK/pyz.json" <<'PY'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
base = res["python -c pass"]["median"]
script = res["fermix (console script)"]["median"]
for name, r in res.items():
    print(f"{name:26s} median {r['median']*1000:7.1f} ms   {r['median']/base:5.2f}x python -c pass"
          f"   {r['median']/script:5.2f}x console script")
PY
