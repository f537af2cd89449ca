"""`pitstop diff TASK@SEQ`'s git process, started before the engine is loaded.

The diff's text is one `git diff` of the checkpoint's tree against its base, ~7 ms on a real
repository, and loading the engine (the store, its keys, its models) takes longer than that.
So the quick path reads the two trees from the store first (`core.store.diff_inputs`, a
read-only query) and starts git on them here; the engine then does everything as it does
without this (finds the checkpoint, checks it is sound, decides what to diff) and takes the
started process over only when it asks for that very diff (`take`): the same repository and
the same two trees. Anything else (another ref, `--against previous`, paths, a row that changed
meanwhile) starts its own, and `drop` stops what nobody took. Nothing of the text is shown
unless the engine found the checkpoint sound, as before.
"""

from __future__ import annotations

import re
from pathlib import Path

from core.git.objects import EMPTY_TREE
from core.snapshot.diff import start_unified_diff

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22)
if TYPE_CHECKING:
    from core.git.spawn import Spawned

_started: dict[tuple[str, str, str], Spawned] = {}
_REF = re.compile(r"(?P<task>[^@\s]+)@(?P<seq>[1-9][0-9]{0,17})")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\.git")
_TREE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def start(store: str | None, ref: str) -> None:
    """Start the diff `pitstop diff REF` (against the base) will ask for, when the store says
    plainly what it is; otherwise do nothing (the engine says what is wrong)."""
    from core.paths import StorePaths, resolve_store_root
    from core.store.diff_inputs import diff_inputs

    match = _REF.fullmatch(ref)
    if match is None:
        return
    try:
        paths = StorePaths(resolve_store_root(store))
    except Exception:  # the engine opens the store and words any refusal itself
        return
    found = diff_inputs(str(paths.database), match.group("task"), int(match.group("seq")))
    if found is None:
        return
    name, tree, base = found
    if not _NAME.fullmatch(name) or not _TREE.fullmatch(tree):
        return
    if base is not None and not _TREE.fullmatch(base):
        return
    store_repo = paths.repos / name
    old = f"{base}^{{tree}}" if base else EMPTY_TREE
    try:
        _started[(str(store_repo), old, tree)] = start_unified_diff(store_repo, old, tree)
    except Exception:  # no git to start: the engine's own start says so
        return


def take(store_repo: Path, old_tree: str, new_tree: str) -> Spawned | None:
    """The diff started here for exactly these, if one was (it is the caller's then)."""
    return _started.pop((str(store_repo), old_tree, new_tree), None)


def drop() -> None:
    """Stop what was started and not taken."""
    while _started:
        _key, process = _started.popitem()
        process.stop()
