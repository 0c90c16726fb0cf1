#!/usr/bin/env bash
# The same three calls as compare_revs.sh, counted in executed instructions instead of timed: valgrind's
# callgrind counts every instruction of one cold `python3 -m fermix_cli ...` process, the same figure on a
# busy machine as on an idle one (within about 0.3 %), so a 1 ms change shows where wall-clock noise on a
# shared 2-core box hides it. Instructions are not time (a cache miss or a system call costs more than its
# count), so confirm a real change with compare_revs.sh on a quiet machine.
# Needs valgrind (apt-get install valgrind). Reports the median of RUNS (default 3) per call, in millions,
# gross and net of `python -c pass`, and after/before of the net figures.
# Usage: [RUNS=3] [WITH_CONFIG=1] bench/compare_instructions.sh BEFORE_REV [AFTER_REV]   (AFTER_REV: HEAD)
set -euo pipefail
command -v valgrind >/dev/null || { echo "compare_instructions.sh needs valgrind (apt-get install valgrind)" >&2; exit 2; }
source "$(dirname "$0")/revs_lib.sh"
cd "$WORK"

count() {  # count 'VAR=VALUE ...' 'COMMAND (shell words)' -> the instructions of one run
  eval "env $1 valgrind --tool=callgrind --callgrind-out-file=/dev/null $2" 2>&1 >/dev/null |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

{
  for name in "python -c pass|$PY -c pass" "python -S -c pass|$PY -S -c pass"; do
    for _ in $(seq "${RUNS:-3}"); do echo "${name%%|*}|$(count "" "${name#*|}")"; done
  done
  for call in "tool file_read|$FILE_READ" "jobs run (idle)|$TICK" "tool grep|$GREP"; do
    for side in before after; do
      for _ in $(seq "${RUNS:-3}"); do
        echo "$side: ${call%%|*}|$(count "FERMIX_HOME=$WORK/home-$side PYTHONPATH=$WORK/$side" "$PY -m fermix_cli ${call#*|}")"
      done
    done
  done
} >"$WORK/counts.txt"

"$PY" - "$WORK/counts.txt" "$BEFORE" "$AFTER" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, _, n = line.rstrip("\n").rpartition("|")
    runs.setdefault(name, []).append(int(n))
med = {name: statistics.median(v) for name, v in runs.items()}
base = med["python -c pass"]
print(f"before = {sys.argv[2]}, after = {sys.argv[3]}; median instructions (millions), gross and net of python -c pass")
for name, n in med.items():
    line = f"{name:26s} {n / 1e6:8.1f} M  net {(n - base) / 1e6:7.1f} M"
    if name.startswith("after: "):
        twin = med["before: " + name[len("after: "):]]
        line += f"   after/before net {(n - base) / (twin - base):.3f}"
    print(line)
PY
