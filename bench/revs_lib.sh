# Shared by compare_revs.sh and compare_instructions.sh (sourced, not run): exports two git revisions of
# fermix_cli into a temporary directory, compiles their bytecode and gives each a home with a small file,
# 50 files for grep, state.db created, and with WITH_CONFIG=1 a config.toml naming [sandbox] and
# [fermix_core.jobs]. Sets REPO, BEFORE, AFTER, PY and WORK, shifts the two revisions off "$@" and
# defines `cmd SIDE ARGS...` (a command line) and the three calls both scripts measure.
REPO=$(cd "$(dirname "$0")/.." && pwd)
BEFORE=${1:?usage: bench/compare_revs.sh BEFORE_REV [AFTER_REV] [hyperfine args...]}
AFTER=${2:-HEAD}
PY=$(python3 -c 'import sys; print(sys.executable)')
WORK=$(mktemp -d)
# Both revisions run from a (fake) home, where a relative path means the fermix workspace for either.
export HOME=$WORK
cd "$WORK"
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


FILE_READ="tool file_read --json '{\"path\":\"bench.txt\"}'"
TICK="jobs run"
GREP="tool grep --json '{\"patterns\":[\"needle\"],\"path\":\"src\"}'"
