"""Stand-ins for the `codex` and `claude` CLIs, written onto PATH by the tests (never the real vendors).

They behave as the vendors' documentation describes: `codex exec --json` writes a JSONL event stream
(`thread.started`, `turn.started`, `item.completed` with an `agent_message`, `turn.completed` with usage;
`turn.failed` and a non-zero exit on failure) and writes the last message to `--output-last-message`;
`claude -p --output-format stream-json --verbose` writes `system`/`assistant` events and a final
`result` event (`subtype`, `is_error`, `result`, `session_id`, `usage`, `total_cost_usd`). Options end at
`--`; the prompt is the one argument after it.

`codex cloud exec --env ENV [--branch B] [--attempts N] -- QUERY` prints the task URL;
`codex cloud status TASK` prints `[PENDING] title` (exit 1) on the first poll and `[READY] title` (exit 0)
after, or `[ERROR]` for a query saying ERROR, or PENDING forever for NEVER; `codex cloud diff TASK` prints
a diff; a query saying CLOUDFAIL fails the submission as an unknown environment does, one saying
CLOUDSLOW hangs 60 s before submitting (its pid in `$HOME/standin/cloud_exec.pid`).

Each call records its argv, cwd, pid, process group and environment names in
`$HOME/standin/<vendor>-<pid>.json`. Words in the prompt pick a behaviour: SLOW (run until killed, up
to 60 s), FORK (start a grandchild in the same process group that sleeps, its pid in the record), CRASH
(fail the way the vendor does), STEPS (report two finished steps first), WAITFILE (run until `$HOME/standin/go` exists), BRIEF (the prompt points
at a brief file: record its size).
"""

from __future__ import annotations

SCRIPT = r"""#!__PYTHON__
import json, os, re, subprocess, sys, time

VENDOR = "__VENDOR__"
argv = sys.argv[1:]
home = os.environ["HOME"]
if VENDOR == "codex" and argv[:1] == ["cloud"]:
    folder = os.path.join(home, "standin", "cloud")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(home, "standin", "cloud.log"), "a") as f:
        f.write(json.dumps(argv) + "\n")
    if argv[1] == "exec":
        query = argv[argv.index("--") + 1]
        if "CLOUDSLOW" in query:
            with open(os.path.join(home, "standin", "cloud_exec.pid"), "w") as f:
                f.write(str(os.getpid()))
            time.sleep(60)
        if "CLOUDFAIL" in query:
            print("Error: environment 'env_x' not found; run `codex cloud` to list available environments", file=sys.stderr)
            sys.exit(1)
        task = "task_e_" + os.urandom(4).hex()
        with open(os.path.join(folder, task + ".json"), "w") as f:
            json.dump({"query": query, "polls": 0}, f)
        print(f"https://chatgpt.com/codex/tasks/{task}")
        sys.exit(0)
    task = argv[2]
    path = os.path.join(folder, task + ".json")
    with open(path) as f:
        state = json.load(f)
    if argv[1] == "status":
        state["polls"] += 1
        with open(path, "w") as f:
            json.dump(state, f)
        if "ERROR" in state["query"]:
            label = "ERROR"
        elif "NEVER" in state["query"] or state["polls"] < 2:
            label = "PENDING"
        else:
            label = "READY"
        print(f"[{label}] {state['query'][:40]}\nenv_x  •  just now\n+3/-1 • 2 files")
        sys.exit(0 if label == "READY" else 1)
    if argv[1] == "diff":
        print("diff --git a/app.py b/app.py\n+print('cloud')")
        sys.exit(0)
    sys.exit(2)
if "--" not in argv:
    print("error: the prompt must follow --", file=sys.stderr)
    sys.exit(2)
cut = argv.index("--")
options, rest = argv[:cut], argv[cut + 1:]
prompt = rest[0] if rest else ""
os.makedirs(os.path.join(home, "standin"), exist_ok=True)
record = {
    "vendor": VENDOR, "argv": argv, "options": options, "prompt_len": len(prompt.encode()),
    "cwd": os.getcwd(), "pid": os.getpid(), "pgid": os.getpgid(0), "env": sorted(os.environ),
}
m = re.search(r"file (/\S+) \(", prompt)
if m:
    with open(m.group(1), "rb") as f:
        record["brief_len"] = len(f.read())
if "FORK" in prompt:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    record["grandchild"] = child.pid
path = os.path.join(home, "standin", f"{VENDOR}-{os.getpid()}.json")
with open(path + ".tmp", "w") as f:
    json.dump(record, f)
os.replace(path + ".tmp", path)

def emit(event):
    print(json.dumps(event), flush=True)

session = "th_standin" if VENDOR == "codex" else "ses_standin"
if VENDOR == "codex":
    if "resume" in options:
        session = options[options.index("resume") + 1]
    emit({"type": "thread.started", "thread_id": session})
    emit({"type": "turn.started"})
else:
    emit({"type": "system", "subtype": "init", "session_id": session, "cwd": os.getcwd(), "tools": ["Read", "Edit"]})

if "STEPS" in prompt:
    if VENDOR == "codex":
        emit({"type": "item.completed", "item": {"id": "item_1", "type": "command_execution", "command": "pytest -q", "exit_code": 0, "status": "completed"}})
        emit({"type": "item.completed", "item": {"id": "item_2", "type": "file_change", "changes": [{"path": "app.py", "kind": "update"}], "status": "completed"}})
    else:
        emit({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Edit", "input": {}}]}, "session_id": session})

deadline = time.time() + 60
if "SLOW" in prompt or ("FORK" in prompt and "QUICK" not in prompt):
    while time.time() < deadline:
        time.sleep(0.05)
if "WAITFILE" in prompt:
    while time.time() < deadline and not os.path.exists(os.path.join(home, "standin", "go")):
        time.sleep(0.02)

if "CRASH" in prompt:
    print("thread 'main' panicked: stand-in crash (model refused the request)", file=sys.stderr)
    if VENDOR == "codex":
        emit({"type": "turn.failed", "error": {"message": "stream error: the model refused the request"}})
        sys.exit(1)
    emit({"type": "result", "subtype": "error_during_execution", "is_error": True, "result": "API Error: overloaded",
          "session_id": session, "num_turns": 1, "usage": {"input_tokens": 3, "output_tokens": 0}})
    sys.exit(1)

answer = "stand-in finished: " + prompt[:60]
if VENDOR == "codex":
    emit({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": answer}})
    emit({"type": "turn.completed", "usage": {"input_tokens": 120, "cached_input_tokens": 20, "output_tokens": 30}})
    if "--output-last-message" in options:
        with open(options[options.index("--output-last-message") + 1], "w") as f:
            f.write(answer)
else:
    emit({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}, "session_id": session})
    emit({"type": "result", "subtype": "success", "is_error": False, "result": answer, "session_id": session,
          "num_turns": 2, "duration_ms": 1234, "total_cost_usd": 0.0123,
          "usage": {"input_tokens": 200, "output_tokens": 40, "cache_read_input_tokens": 10}})
sys.exit(0)
"""


def install(bin_dir, python: str, vendors=("codex", "claude")) -> None:
    """Write the stand-ins as executables named `codex` / `claude` into `bin_dir`."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in vendors:
        vendor = "codex" if name == "codex" else "claude_code"
        path = bin_dir / name
        path.write_text(SCRIPT.replace("__PYTHON__", python).replace("__VENDOR__", vendor))
        path.chmod(0o755)
