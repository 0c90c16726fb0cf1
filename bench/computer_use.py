"""computer_use on a private Xvfb: in-process medians of a screenshot, a zoomed screenshot and a click with
its check screenshot, beside the references measured in the same run (a bare mss grab plus PNG encode,
and a bare `xdotool mousemove click`).

    python3 bench/computer_use.py [N]      (N calls per figure, default 30; needs Xvfb, xdotool, x11-utils)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def median_ms(fn: Callable[[], object], n: int) -> float:
    fn()  # warm: imports, the first connection, state.db migrations
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main(n: int) -> None:
    from tests.computer.desktop import Desktop

    tmp = Path(tempfile.mkdtemp(prefix="fermix-bench-cu-"))
    desk = Desktop(tmp, size="1280x800")
    desk.start()
    try:
        home = tmp / "fermix"
        home.mkdir()
        (home / "config.toml").write_text(
            f'[fermix_core.computer_use]\nenabled = true\ndisplay = "{desk.display}"\n'
        )
        from fermix_cli.core.context import ToolContext
        from fermix_cli.core.paths import resolve_paths
        from fermix_cli.core.registry import default_registry

        ctx = ToolContext(paths=resolve_paths(str(home)), launch_cwd=str(tmp))
        reg = default_registry()

        def call(args: dict[str, object]) -> Callable[[], object]:
            return lambda: reg.invoke("computer_use", args, ctx)

        def bare_grab() -> None:
            import mss
            from PIL import Image

            with (getattr(mss, "MSS", None) or mss.mss)(display=desk.display) as sct:
                shot = sct.grab(sct.monitors[1])
            image = Image.frombytes("RGB", shot.size, shot.bgra, "raw", "BGRX")
            with open(tmp / "bare.png", "wb") as f:
                image.save(f, "PNG", compress_level=1)

        env = {**os.environ, "DISPLAY": desk.display}

        def bare_click() -> None:
            subprocess.run(["xdotool", "mousemove", "60", "35", "click", "1"], env=env, check=True)

        region = {"x": 20, "y": 120, "w": 200, "h": 100}
        rows = [
            ("reference: mss grab + PNG encode, 1280x800", median_ms(bare_grab, n)),
            ("computer_use screenshot, 1280x800", median_ms(call({"action": "screenshot"}), n)),
            (
                "computer_use screenshot, region 200x100 at 5.12x",
                median_ms(call({"action": "screenshot", "region": region}), n),
            ),
            ("reference: xdotool mousemove + click", median_ms(bare_click, n)),
        ]
        reg.invoke("computer_use", {"action": "screenshot"}, ctx)
        rows.append(
            (
                "computer_use left_click + check screenshot",
                median_ms(call({"action": "left_click", "x": 60, "y": 35}), n),
            )
        )
        ctx.close()
        for label, ms in rows:
            print(f"{label:<52} {ms:8.1f} ms")
        print(
            f"screenshot / reference: {rows[1][1] / rows[0][1]:.2f}x; click / (reference click + grab): "
            f"{rows[4][1] / (rows[3][1] + rows[0][1]):.2f}x"
        )
    finally:
        desk.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
