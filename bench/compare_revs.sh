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
REPO=$(cd "$(dirname "$0")/.." && pwd)
BEFORE=${1:?usage: bench/compare_revs.sh BEFORE_REV [AFTER_REV] [hyperfine args...]}
AFTER=${2:-HEAD}
shift $(($# < 2 ? $# : 2))
PY=$(python3 -c 'import sys; print(sys.executable)')
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

for side in before after; do
  rev=$BEFORE
  [ "$side" = after ] && rev=$AFTER
  mkdir -p "$WORK/$side"
  git -C "$REPO" archive "$rev" fermix_cli | tar -x -C "$WORK/$side"
  "$PY" -m compileall -q "$WORK/$side/fermix_cli"
  home="$WORK/home-$side"
  export FERMIX_HOME=$home
  PYTHONPATH="$WORK/$side" "$PY" -m fermix_cli tool file_write \
    --json '{"path":"bench.txt","content":"hello\nworld\n"}' >/dev/null
  mkdir -p "$home/workspace/src"
  for i in $(seq 1 50); do printf 'line one\nneedle %s\nline three\n' "$i" >"$home/workspace/src/f$i.txt"; done
  if [ -n "${WITH_CONFIG:-}" ]; then  # a home whose config.toml names a few tables, as a user's would
    PYTHONPATH="$WORK/$side" "$PY" -m fermix_cli config set sandbox.mode standard >/dev/null
    PYTHONPATH="$WORK/$side" "$PY" -m fermix_cli config set fermix_core.jobs.max_concurrent_runs 3 >/dev/null
  fi
  PYTHONPATH="$WORK/$side" "$PY" -m fermix_cli jobs run >/dev/null  # create state.db before timing
done
unset FERMIX_HOME

cmd() {  # cmd SIDE ARGS... -> a command line for hyperfine
  local side=$1
  shift
  printf 'env FERMIX_HOME=%s PYTHONPATH=%s %s -m fermix_cli %s' "$WORK/home-$side" "$WORK/$side" "$PY" "$*"
}

cd "$WORK"
hyperfine --warmup "${WARMUP:-5}" --runs "${RUNS:-30}" -N --export-json "$WORK/compare.json" "$@" \
  -n "python -c pass" "$PY -c pass" \
  -n "python -S -c pass" "$PY -S -c pass" \
  -n "before: tool file_read" "$(cmd before "tool file_read --json '{\"path\":\"bench.txt\"}'")" \
  -n "after:  tool file_read" "$(cmd after "tool file_read --json '{\"path\":\"bench.txt\"}'")" \
  -n "before: jobs run (idle)" "$(cmd before "jobs run")" \
  -n "after:  jobs run (idle)" "$(cmd after "jobs run")" \
  -n "before: tool grep" "$(cmd before "tool grep --json '{\"patterns\":[\"needle\"],\"path\":\"src\"}'")" \
  -n "after:  tool grep" "$(cmd after "tool grep --json '{\"patterns\":[\"needle\"],\"path\":\"src\"}'")" \
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
