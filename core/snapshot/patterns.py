"""File-name patterns (credential names, lockfile names) matched without compiling regexes.

`fnmatch` compiles each pattern into a regex on first use, which cost ~1 ms of every hook
checkpoint; the patterns Pitstop ships are plain text with at most one `*`.
"""

from __future__ import annotations

import fnmatch


def matches_any(patterns: tuple[str, ...], name: str) -> bool:
    """`fnmatch.fnmatchcase` against any of `patterns`. A pattern of plain text with at most one
    `*` (all of ours) is checked with string operations; any other pattern goes to fnmatch."""
    for pattern in patterns:
        head, star, tail = pattern.partition("*")
        if "?" in pattern or "[" in pattern or "*" in tail:
            if fnmatch.fnmatchcase(name, pattern):
                return True
        elif not star:
            if name == pattern:
                return True
        elif len(name) >= len(head) + len(tail) and name.startswith(head) and name.endswith(tail):
            return True
    return False
