"""Staged files the base commit does not have: judged for secrets like changed files.

The index tree holds what `git add` staged, so a token added and staged would be stored through
it even when the work tree no longer shows it. Each staged blob the base commit lacks is read
and judged with the redactor's rules; one that holds a secret is sealed in the index tree
(`core.snapshot.sealed_files`). Where the work tree still holds exactly the staged bytes (the
common case: `git add`, no edit since), they are read from disk and checked against the blob id;
the others are read from the user's repository's objects (loose or packed, read directly; a
`cat-file` only for what that reader cannot parse). Nothing is written there.
"""

from __future__ import annotations

from collections.abc import Sequence, Set

from core.git.reader import ObjectReader
from core.git.run import run_git
from core.snapshot.sealed_files import INDEX, AllowedSecret, Candidate, git_blob_id
from core.snapshot.secret_scan import first_secret
from core.snapshot.selection import Scanner, StagedBlob, read_for_scan
from core.snapshot.source import SourceRepo


def staged_to_seal(
    source: SourceRepo,
    staged: Sequence[StagedBlob],
    allowed: Set[str],
    scanner: Scanner = first_secret,
) -> tuple[list[Candidate], list[AllowedSecret]]:
    """The staged files to seal in the index tree, and those kept because `allowed`."""
    contents: dict[str, bytes] = {}
    unread: list[StagedBlob] = []
    for entry in staged:
        read = None if entry.worktree_differs else read_for_scan(source.toplevel / entry.path)
        if read is not None and git_blob_id(read[0]) == entry.blob:
            contents[entry.blob] = read[0]
        else:
            unread.append(entry)
    contents.update(_read_blobs(source, [entry.blob for entry in unread]))
    to_seal: list[Candidate] = []
    kept: list[AllowedSecret] = []
    for entry in staged:
        data = contents.get(entry.blob)
        hit = scanner(data) if data is not None else None
        if hit is None or data is None:
            continue
        if entry.path in allowed:
            kept.append(AllowedSecret(entry.path, hit.rule, hit.line))
        else:
            to_seal.append(Candidate(INDEX, entry.path, entry.mode, data, hit.rule, hit.line))
    return to_seal, kept


def _read_blobs(source: SourceRepo, blobs: Sequence[str]) -> dict[str, bytes]:
    """Blobs of the user's repository by id, read only: from its object files directly, and
    what that cannot read (objects elsewhere, an alternate) through git in its work tree."""
    wanted = list(dict.fromkeys(blobs))
    if not wanted:
        return {}
    reader = ObjectReader(source.common_dir)
    try:
        found = {oid: reader.read(oid) for oid in wanted}
    finally:
        reader.close()
    contents = {oid: item[1] for oid, item in found.items() if item and item[0] == "blob"}
    rest = [oid for oid in wanted if oid not in contents]
    if rest:
        contents.update(_cat_file(source, rest))
    return contents


def _cat_file(source: SourceRepo, blobs: Sequence[str]) -> dict[str, bytes]:
    """Blobs read by `git cat-file --batch` in the user's work tree (missing ones left out)."""
    raw = run_git(
        ["cat-file", "--batch"], cwd=source.toplevel, input=("\n".join(blobs) + "\n").encode()
    )
    found: dict[str, bytes] = {}
    position = 0
    for oid in blobs:
        end = raw.index(b"\n", position)
        header = raw[position:end].split()
        position = end + 1
        if len(header) != 3:  # "<oid> missing"
            continue
        size = int(header[2])
        found[oid] = raw[position : position + size]
        position += size + 1
    return found
