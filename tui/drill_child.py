"""The dashboard's restore drill, run in a child process so that it can be cancelled.

A drill replays a test or build command in a scratch restore; the only way to stop a replay half
way is to end the process running it. So the dashboard starts this module (`python -m
tui.drill_child STORE REF`): it runs `Engine.drill` as the TUI (audited with interface `tui`),
streams the replay's output to stderr, and prints one JSON line on stdout: the report and its
words, or the error. A drill killed here leaves a scratch directory the next drill (or `pitstop
doctor --fix`) removes.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    """Drill `argv[1]` in the store at `argv[0]`; 0 when the drill ran (whatever its verdict)."""
    from core.engine import Engine
    from core.errors import PitstopError
    from core.harness.drill_guard import guard_screen
    from core.models import Interface
    from tui.cli.drill import report_text

    store, ref = argv
    try:
        with Engine(store, interface=Interface.TUI) as engine:
            report = engine.drill(ref, screen=guard_screen(), out_fd=2)
    except PitstopError as exc:
        print(json.dumps({"error": exc.message}), flush=True)
        return 1
    print(json.dumps({"report": report.as_dict(), "text": report_text(report)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
