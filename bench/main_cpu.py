"""CPU time of `main()` for `fermix tool file_read` and an idle `fermix jobs run`, per checkout.

Usage: python3 bench/main_cpu.py CHECKOUT[,CHECKOUT...] [N] [plain|hosts]

Each run is a fresh interpreter that times `fermix_cli.__main__.main()` with `time.process_time()`, so
interpreter start-up and other load on the machine weigh less than in wall time. Checkouts alternate
run by run. Precompile each checkout first (`python3 -m compileall -q DIR/fermix_cli`): with
PYTHONDONTWRITEBYTECODE set, a tree without bytecode compiles every module on every run. `hosts` adds
allowed_private_hosts and a provider base_url to config.toml (their checks import the network guard).
"""

import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

repos = sys.argv[1].split(",")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 25
cfg = sys.argv[3] if len(sys.argv) > 3 else "plain"
T = pathlib.Path(tempfile.mkdtemp())
proj = T / "proj"
proj.mkdir()
(proj / "x").write_text("hi\n")
text = '[sandbox]\nmode = "standard"\n[fermix_core.routing]\ncron_model = "small"\n'
if cfg == "hosts":
    text += '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n[fermix_core.providers.local]\ntype = "openai"\nbase_url = "http://127.0.0.1:8080/v1"\n'
code = """
import sys, time
t = time.process_time()
from fermix_cli.__main__ import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(round((time.process_time() - t) * 1000, 2), file=sys.stderr)
"""
cases = {"file_read": ["tool", "file_read", "--json", '{"path":"x"}'], "jobs run": ["jobs", "run"]}
envs = {}
for i, r in enumerate(repos):
    h = T / f"h{i}"
    h.mkdir()
    (h / "config.toml").write_text(text)
    envs[r] = {
        **os.environ,
        "HOME": str(T),
        "FERMIX_HOME": str(h),
        "PYTHONPATH": r,
        "PYDANTIC_DISABLE_PLUGINS": "__all__",
    }


def once(r, argv):
    p = subprocess.run(
        [sys.executable, "-c", code, *argv], env=envs[r], cwd=proj, capture_output=True, text=True
    )
    return float(p.stderr.strip().splitlines()[-1])


for r in repos:
    for argv in cases.values():
        once(r, argv)
        once(r, argv)
res = {(r, k): [] for r in repos for k in cases}
for _ in range(n):
    for k, argv in cases.items():
        for r in repos if _ % 2 == 0 else list(reversed(repos)):
            res[(r, k)].append(once(r, argv))
print(f"config {cfg}, {n} runs each, load {os.getloadavg()[0]:.1f}")
for k in cases:
    for r in repos:
        v = res[(r, k)]
        print(f"{k:9s} {r:22s} main() cpu: median {statistics.median(v):6.2f} ms  min {min(v):6.2f} ms")
