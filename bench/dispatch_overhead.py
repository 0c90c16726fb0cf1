"""In-process dispatch overhead per tool call: a mock-provider loop calling file_read N times, against
calling the file_read handler directly (target: under 1 ms of overhead per call).

Three timings per repeat, all in one process on the same file:
  direct   file_read's handler with pre-validated params (the floor)
  invoke   registry.invoke with raw JSON arguments (parse, validate, policy, render, no recording)
  loop     the model loop with the mock provider: one tool call per model turn, every message and call
           written to state.db, as `fermix ask` does

Usage: python3 bench/dispatch_overhead.py [N] [REPEATS]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        project = home / "project"
        project.mkdir(parents=True)
        os.environ["HOME"] = str(home)  # the project is inside the (fake) home, so it is a sandbox root
        os.environ["FERMIX_HOME"] = str(home / ".fermix")
        os.chdir(project)
        (project / "bench.txt").write_text("alpha\nbeta\ngamma\n")

        from fermix_cli.agent.assemble import Agent, AgentOptions
        from fermix_cli.core.context import ToolContext
        from fermix_cli.core.registry import default_registry
        from fermix_cli.tools.files import FileReadParams, file_read

        # Consecutive calls differ (offset 1, 2, 3, ...) so the repeat guard never steps in.
        args = [{"path": "bench.txt", "offset": 1 + i % 3} for i in range(n)]
        script = [{"tool_calls": [{"name": "file_read", "arguments": a}]} for a in args] + [{"text": "done"}]
        script_path = project / "script.json"
        script_path.write_text(json.dumps(script))
        reg = default_registry()

        direct, invoke, loop = [], [], []
        for _ in range(repeats):
            ctx = ToolContext.for_cli()
            params = [FileReadParams.model_validate(a) for a in args]
            file_read(params[0], ctx)  # warm the sandbox
            t0 = time.perf_counter()
            for p in params:
                file_read(p, ctx)
            direct.append((time.perf_counter() - t0) / n)

            raw = [json.dumps(a) for a in args]
            t0 = time.perf_counter()
            for r in raw:
                reg.invoke_for_model("file_read", r, ctx)
            invoke.append((time.perf_counter() - t0) / n)
            ctx.close()

            ctx = ToolContext.for_cli()
            agent = Agent(ctx, AgentOptions(provider="mock", model=str(script_path), max_iterations=n + 1))
            agent.open()
            t0 = time.perf_counter()
            result = agent.run("read bench.txt many times")
            loop.append((time.perf_counter() - t0) / n)
            assert result.status == "ok" and len(result.outcomes) == n, (result.status, result.error)
            assert all(o.ok for o in result.outcomes)
            agent.close()
            ctx.close()

        med_direct, med_invoke, med_loop = (statistics.median(x) * 1000 for x in (direct, invoke, loop))
        print(f"file_read x {n} calls, {repeats} repeats (medians, ms per call)")
        print(f"  direct handler      {med_direct:8.4f}")
        print(f"  registry.invoke     {med_invoke:8.4f}   overhead {med_invoke - med_direct:7.4f}")
        print(
            f"  mock-provider loop  {med_loop:8.4f}   overhead {med_loop - med_direct:7.4f}  (target < 1 ms)"
        )


if __name__ == "__main__":
    main()
