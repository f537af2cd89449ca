"""A hook command that keeps what Claude Code sends: the e2e tests' record of real payloads.

Installed in the test HOME's `~/.claude/settings.json` beside Pitstop's own hooks (which the
real `pitstop hook install` writes into the project's settings), it saves each event's stdin,
byte for byte, with the hook's environment variables that name the client (`CLAUDE_*`,
`AI_AGENT`), and answers nothing: Claude Code goes on as if it were not there. The tests read
these files to show what a real client sends, and `regenerate_fixtures.py` turns them into
fixtures. Standard library only: it runs on every event.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

_ENV_PREFIXES = ("CLAUDE", "AI_AGENT")


def main() -> int:
    """Save stdin as `<ns>-<event>.json` (and its environment) in the directory named by argv[1]."""
    directory = Path(sys.argv[1])
    directory.mkdir(parents=True, exist_ok=True)
    raw = sys.stdin.buffer.read()
    try:
        name = str(json.loads(raw).get("hook_event_name") or "unknown")
    except (ValueError, AttributeError):
        name = "unparsable"
    stem = f"{time.time_ns():020d}-{os.getpid()}-{name}"
    (directory / f"{stem}.json").write_bytes(raw)
    environment = {
        key: value
        for key, value in os.environ.items()
        if key.startswith(_ENV_PREFIXES) and "TOKEN" not in key
    }
    (directory / f"{stem}.env.json").write_text(json.dumps(environment, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
