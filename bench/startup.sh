#!/usr/bin/env bash
# Cold start of a machine call, `--help` and `--version` against bare Python and `import typer`, in one
# hyperfine run.
# Usage: bench/startup.sh [hyperfine args...]   (needs hyperfine and an installed fermix)
set -euo pipefail
PY=$(python3 -c 'import sys; print(sys.executable)')
FERMIX=$(dirname "$PY")/fermix
[ -x "$FERMIX" ] || FERMIX=$(command -v fermix)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export FERMIX_HOME="$WORK/home"
# Run from a (fake) home: from there a relative path means the fermix workspace, wherever this runs.
export HOME="$WORK"
cd "$WORK"
"$FERMIX" tool file_write --json '{"path":"bench.txt","content":"hello\nworld\n"}' >/dev/null
hyperfine --warmup 5 --runs "${RUNS:-40}" -N --export-json "$WORK/startup.json" "$@" \
  -n "python -c pass" "$PY -c pass" \
  -n "python -c 'import typer'" "$PY -c 'import typer'" \
  -n "fermix tool file_read" "$FERMIX tool file_read --json '{\"path\":\"bench.txt\"}'" \
  -n "fermix --help" "$FERMIX --help" \
  -n "fermix --version" "$FERMIX --version"
# An editable install (`pip install -e`) runs its `.pth` finder in every start of this interpreter,
# `python -c pass` included, which hides most of fermix's own start-up in the ratios: say so.
if "$PY" -c 'import glob, sysconfig, sys; sys.exit(0 if glob.glob(sysconfig.get_paths()["purelib"] + "/__editable__*.pth") else 1)'; then
  echo "NOTE: $PY has an editable install's .pth finder, which every start (python -c pass too) runs;"
  echo "      for the figures users get, run this in an environment made by 'pip install .'"
fi
python3 - "$WORK/startup.json" <<'PY'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
base = res["python -c pass"]["median"]
for name, r in res.items():
    print(f"{name:28s} median {r['median']*1000:7.1f} ms   {r['median']/base:5.2f}x python -c pass")
PY
