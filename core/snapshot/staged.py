"""Staged files the base commit does not have: judged for secrets like changed files.

The index tree holds what `git add` staged, so a token added and staged would be stored through
it even when the work tree no longer shows it. Each staged blob the base commit lacks is read
and judged with the redactor's rules; one that holds a secret is sealed in the index tree
(`core.snapshot.sealed_files`). Where the work tree still holds exactly the staged bytes (the
common case: `git add`, no edit since), they are read from disk and checked against the blob id,
at no git process; only the others are read from the user's repository, in one `cat-file`.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from pathlib import Path

from core.git.run import run_git
from core.snapshot.sealed_files import INDEX, AllowedSecret, Candidate, git_blob_id
from core.snapshot.secret_scan import first_secret
from core.snapshot.selection import StagedBlob, read_for_scan


def staged_to_seal(
    toplevel: Path, staged: Sequence[StagedBlob], allowed: Set[str]
) -> tuple[list[Candidate], list[AllowedSecret]]:
    """The staged files to seal in the index tree, and those kept because `allowed`."""
    contents: dict[str, bytes] = {}
    unread: list[StagedBlob] = []
    for entry in staged:
        read = None if entry.worktree_differs else read_for_scan(toplevel / entry.path)
        if read is not None and git_blob_id(read[0]) == entry.blob:
            contents[entry.blob] = read[0]
        else:
            unread.append(entry)
    contents.update(_read_blobs(toplevel, [entry.blob for entry in unread]))
    to_seal: list[Candidate] = []
    kept: list[AllowedSecret] = []
    for entry in staged:
        data = contents.get(entry.blob)
        hit = first_secret(data) if data is not None else None
        if hit is None or data is None:
            continue
        if entry.path in allowed:
            kept.append(AllowedSecret(entry.path, hit.rule, hit.line))
        else:
            to_seal.append(Candidate(INDEX, entry.path, entry.mode, data, hit.rule, hit.line))
    return to_seal, kept


def _read_blobs(toplevel: Path, blobs: Sequence[str]) -> dict[str, bytes]:
    """Blobs of the user's repository by id (read only), from one `cat-file --batch`."""
    wanted = list(dict.fromkeys(blobs))
    if not wanted:
        return {}
    raw = run_git(
        ["cat-file", "--batch"], cwd=toplevel, input=("\n".join(wanted) + "\n").encode()
    )
    found: dict[str, bytes] = {}
    position = 0
    for oid in wanted:
        end = raw.index(b"\n", position)
        header = raw[position:end].split()
        position = end + 1
        if len(header) != 3:  # "<oid> missing": the index names a blob the repository lacks
            continue
        size = int(header[2])
        found[oid] = raw[position : position + size]
        position += size + 1
    return found
