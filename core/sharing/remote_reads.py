"""Reading the files of fetched commits with a cap on each: never an oversized blob in memory.

A remote's commits arrive in the store's repository before anything is checked, and any of
their blobs may be as large as the pusher liked. Every read of one goes through here: its size
is asked first (`plumbing.read_capped`), and a blob over its file's cap
(`core.sharing.remote_documents`) is refused without being read. One oversized ledger fact is
left out with one line and the rest of the ledger is read; an oversized header, key or
checkpoint file makes its task or checkpoint unreadable, which its caller reports alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from core.git import plumbing
from core.sharing import remote_documents as docs
from core.sharing.layout import FACTS_DIR, KEY_FILE, TASK_FILE
from core.sharing.remote_input import RemoteFormatError, shown

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

# Files of a ledger commit by path prefix, and their caps; anything else is capped as a fact.
LEDGER_CAPS = {TASK_FILE: docs.HEADER_CAP, KEY_FILE: docs.KEY_CAP, FACTS_DIR: docs.FACT_CAP}
# A ledger commit's files Pitstop could not do without: one refused means the task is.
_ESSENTIAL = (TASK_FILE, KEY_FILE)
# A commit object (its parents are read from it).
COMMIT_CAP = 1024 * 1024


class LedgerFiles(NamedTuple):
    """A ledger commit's files within their caps, and one line for each file left out."""

    files: dict[str, bytes]
    refused: list[str]


def read_capped(store_repo: Path, caps: Mapping[str, int], what: str) -> dict[str, bytes | None]:
    """Read each spec within its cap (missing: None); one over its cap raises, naming `what`."""
    found = plumbing.read_capped(store_repo, caps)
    out: dict[str, bytes | None] = {}
    for spec, data in found.items():
        if isinstance(data, plumbing.Oversized):
            name = spec.partition(":")[2] or spec[:12]
            raise RemoteFormatError(
                f"{what}: {name} is {data.size} bytes, over its {data.cap}-byte limit; "
                "it is not read"
            )
        out[spec] = data
    return out


def read_ledger_files(store_repo: Path, rev: str | None, task_id: str) -> LedgerFiles:
    """Every file of a fetched ledger commit within its cap; an oversized fact is left out
    with one line, an oversized header or key refuses the task."""
    if rev is None:
        return LedgerFiles({}, [])
    entries = {
        path: oid
        for path, (kind, oid) in plumbing.list_tree(store_repo, rev).items()
        if kind == "blob"
    }
    caps = {oid: docs.cap_of(path, LEDGER_CAPS, docs.FACT_CAP) for path, oid in entries.items()}
    found = plumbing.read_capped(store_repo, caps)
    files: dict[str, bytes] = {}
    refused: list[str] = []
    for path, oid in entries.items():
        data = found.get(oid)
        if isinstance(data, plumbing.Oversized):
            line = f"{shown(path)} is {data.size} bytes, over its {data.cap}-byte limit"
            if path in _ESSENTIAL:
                raise RemoteFormatError(f"the remote ledger of {task_id}: {line}; it is not read")
            refused.append(f"{line}; left out")
        else:
            files[path] = data or b""
    return LedgerFiles(files, refused)


def task_headers(
    store_repo: Path, ledgers: Mapping[str, str]
) -> tuple[dict[str, bytes | None], dict[str, str]]:
    """Each task's `task.json` (task → ledger commit) within its cap (missing: None), and one
    line for each task whose header is over its cap and was not read."""
    found = plumbing.read_capped(
        store_repo, {f"{oid}:{TASK_FILE}": docs.HEADER_CAP for oid in ledgers.values()}
    )
    headers: dict[str, bytes | None] = {}
    refused: dict[str, str] = {}
    for task_id, oid in ledgers.items():
        data = found.get(f"{oid}:{TASK_FILE}")
        if isinstance(data, plumbing.Oversized):
            refused[task_id] = (
                f"its header is {data.size} bytes, over its {data.cap}-byte limit; it is not read"
            )
        else:
            headers[task_id] = data
    return headers, refused
