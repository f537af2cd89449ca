"""What the harness running this process says about itself in the environment.

Claude Code starts its hooks (and the commands its agent runs) with `AI_AGENT` naming itself:
`claude-code_2-1-332_harness` in the releases of late 2026 (words joined by `_`, the version's
dots written as `-`), `claude-code/2.1.122/agent` before. SessionStart rarely names the model
and `-p` runs never do, so the environment is where a hook learns the harness's version, and
where validation, run inside a session, learns the version running now. Standard library only: it is
on every hook's path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_VERSION = re.compile(r"\d+(?:\.\d+)+(?:[-+][0-9A-Za-z.-]+)?")
_DASHED_VERSION = re.compile(r"\d+(?:-\d+)+")
_MAX_VERSION = 40


def harness_version(harness: str, env: Mapping[str, str]) -> str | None:
    """The version of `harness` as `AI_AGENT` names it, or None (another harness, or none)."""
    agent = env.get("AI_AGENT") or ""
    words = agent.split("/")
    if len(words) >= 2 and words[0] == harness:
        version = words[1]
        return version if len(version) <= _MAX_VERSION and _VERSION.fullmatch(version) else None
    words = agent.split("_")
    if len(words) >= 2 and words[0] == harness:
        dashed = words[1]
        if len(dashed) <= _MAX_VERSION and _DASHED_VERSION.fullmatch(dashed):
            return dashed.replace("-", ".")
    return None
