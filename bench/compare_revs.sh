#!/usr/bin/env bash
# Cold start of three everyday calls, for two git revisions side by side in one hyperfine run:
# `fermix tool file_read`, an idle `fermix jobs run` tick (nothing due) and a small `fermix tool grep`,
# each against `python -c pass` and `python -S -c pass` (the same interpreter without site and .pth files).
# Both trees get compiled bytecode first (a pip install compiles it; PYTHONDONTWRITEBYTECODE would otherwise
# make every run compile from source) and run with PYTHONPATH=<tree> python3 -m fermix_cli.
#
# WITH_CONFIG=1 gives both homes a config.toml naming [sandbox] and [fermix_core.jobs].
# Usage: [RUNS=30] [WARMUP=5] [WITH_CONFIG=1] bench/compare_revs.sh BEFORE_REV [AFTER_REV] [hyperfine args...]   (AFTER_REV: HEAD)
set -euo pipefail
source "$(dirname "$0")/revs_lib.sh"
shift $(($# < 2 ? $# : 2))

cd "$WORK"
hyperfine --warmup "${WARMUP:-5}" --runs "${RUNS:-30}" -N --export-json "$WORK/compare.json" "$@" \
  -n "python -c pass" "$PY -c pass" \
  -n "python -S -c pass" "$PY -S -c pass" \
  -n "before: tool file_read" "$(cmd before "$FILE_READ")" \
  -n "after:  tool file_read" "$(cmd after "$FILE_READ")" \
  -n "before: jobs run (idle)" "$(cmd before "$TICK")" \
  -n "after:  jobs run (idle)" "$(cmd after "$TICK")" \
  -n "before: tool grep" "$(cmd before "$GREP")" \
  -n "after:  tool grep" "$(cmd after "$GREP")" \
  >/dev/null
"$PY" - "$WORK/compare.json" "$BEFORE" "$AFTER" <<'PY'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
base = res["python -c pass"]["median"]
print(f"before = {sys.argv[2]}, after = {sys.argv[3]}; medians, ratio to python -c pass")
for name, r in res.items():
    line = f"{name:26s} {r['median']*1000:7.1f} ms  {r['median']/base:5.2f}x"
    if name.startswith("after:"):
        twin = res["before:" + name[len("after:"):].replace("  ", " ", 1)]
        line += f"   after/before {r['median']/twin['median']:.3f}"
    print(line)
PY
