"""What the harness running this process says about itself in the environment.

Claude Code starts its hooks (and the commands its agent runs) with
`AI_AGENT=claude-code/<version>[/<kind>]`; SessionStart rarely names the model and `-p` runs
never do, so the environment is where a hook learns the harness's version, and where
validation, run inside a session, learns the version running now. Standard library only: it is
on every hook's path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_VERSION = re.compile(r"\d+(?:\.\d+)+(?:[-+][0-9A-Za-z.-]+)?")


def harness_version(harness: str, env: Mapping[str, str]) -> str | None:
    """The version of `harness` as `AI_AGENT` names it, or None (another harness, or none)."""
    words = (env.get("AI_AGENT") or "").split("/")
    if (
        len(words) >= 2
        and words[0] == harness
        and len(words[1]) <= 40
        and _VERSION.fullmatch(words[1])
    ):
        return words[1]
    return None
