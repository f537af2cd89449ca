"""Checkpoint attestations: the signed ledger fact that says which remote commit a checkpoint is.

A remote is writable by more people than a task trusts, and most of a checkpoint's commit is
plain: its `worktree/` and `index/` trees, the `pitstop.json` header, the counts in
`checkpoint.json` and each evidence item's `item.json` (exit code, duration, sizes). Sealing
does not cover those, so whoever can push could swap the worktree for a backdoored one or turn a
failing test run into a passing one. So the store that exports a checkpoint signs, as a ledger
fact of kind `checkpoint`, exactly what it exported: the commit id, the sha256 of every plain
part and the snapshot's tree ids. A store that imports a checkpoint takes it only when a fact
the task's roster admits says exactly that of the commit it read (`mismatch`), and the tree ids
also equal those inside the sealed manifest, which only holders of the data key can write.

The fact's plain part is a function of the commit's bytes alone (`describe_commit`), so the
same checkpoint always gives the same uid: re-exporting, or attesting an old export again,
adds nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from core import store
from core.errors import PitstopError
from core.git import plumbing
from core.ledger.fact_format import CHECKPOINT, Fact, LedgerFormatError, fact_path, parse_fact
from core.ledger.facts import record_signed_fact
from core.ledger.local_facts import plain_fact
from core.sharing.layout import CHECKPOINT_FILE, NOTE_FILE
from core.sharing.sealing import open_json
from core.snapshot.checkpoint import HEADER_FILE, MANIFEST_FILE

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.session import Session

# What each field covers, for the one line that refuses a checkpoint whose field differs.
_FIELDS = {
    "seq": "its sequence number",
    "checkpoint_sha256": "its checkpoint.json (reason, times, counts, evidence list)",
    "header_sha256": "its pitstop.json header",
    "manifest_sha256": "its sealed manifest",
    "note_sha256": "its sealed note",
    "evidence": "its evidence index (exit codes, durations, sizes)",
    "worktree_tree": "its worktree/ tree",
    "index_tree": "its index/ tree",
}


class CheckpointRefused(PitstopError):
    """A fetched checkpoint that no admitted attestation vouches for as it is: not taken."""


def _sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def describe_commit(session: Session, store_repo: Path, task_id: str, oid: str) -> dict[str, Any]:
    """The plain part of the attestation of a remote checkpoint commit, from its bytes as they
    are (a CheckpointRefused when they cannot be read as a checkpoint)."""
    raw = plumbing.read_objects(
        store_repo, [f"{oid}:{name}" for name in (CHECKPOINT_FILE, HEADER_FILE, MANIFEST_FILE)]
        + [f"{oid}:{NOTE_FILE}"],
    )  # fmt: skip
    listing = raw[f"{oid}:{CHECKPOINT_FILE}"]
    try:
        facts = json.loads(listing or b"")
        seq = facts["seq"]
        ids = [str(int(i)) for i in facts.get("evidence") or []]
        sealed_worktree = facts.get("worktree") == "sealed"
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise CheckpointRefused(f"its {CHECKPOINT_FILE} is unreadable") from exc
    items = plumbing.read_objects(store_repo, [f"{oid}:evidence/{i}/item.json" for i in ids])
    if sealed_worktree:
        sealed = open_json(
            session, task_id, f"remote/checkpoint/{seq}", str(facts.get("sealed")),
            f"{task_id}@{seq}",
        )  # fmt: skip
        trees = (sealed.get("worktree_tree"), sealed.get("index_tree"))
    else:
        top = plumbing.top_entries(store_repo, oid)
        trees = (top.get("worktree"), top.get("index"))
    return plain_fact(
        CHECKPOINT,
        task_id,
        seq=seq,
        commit=oid,
        checkpoint_sha256=_sha256(listing),
        header_sha256=_sha256(raw[f"{oid}:{HEADER_FILE}"]),
        manifest_sha256=_sha256(raw[f"{oid}:{MANIFEST_FILE}"]),
        note_sha256=_sha256(raw[f"{oid}:{NOTE_FILE}"]),
        worktree_tree=trees[0],
        index_tree=trees[1],
        evidence={i: _sha256(items[f"{oid}:evidence/{i}/item.json"]) for i in ids},
    )


def attest(session: Session, store_repo: Path, task_id: str, oid: str) -> str:
    """Sign and keep the attestation of a checkpoint commit this store exported; its uid."""
    return record_signed_fact(session, task_id, describe_commit(session, store_repo, task_id, oid))


def _checkpoint_facts(held: Mapping[str, tuple[str, bytes]]) -> list[Fact]:
    found = []
    for uid, (kind, body) in held.items():
        if kind != CHECKPOINT:
            continue
        try:
            fact = parse_fact(fact_path(uid, kind), body)
        except LedgerFormatError:
            continue
        if not fact.legacy:
            found.append(fact)
    return found


def attested_commits(session: Session, task_id: str) -> set[str]:
    """The remote checkpoint commits that a signed attestation this store holds names."""
    held = store.ledger_fact_records(session.db, task_id)
    return {str(fact.get("commit")) for fact in _checkpoint_facts(held)}


def attestations(
    session: Session, task_id: str, offered: Mapping[str, bytes] = {}
) -> dict[str, list[Fact]]:
    """Every admitted attestation of the task, by the commit it names: those this store holds,
    and `offered` (path → bytes of facts the roster admitted in this fetch, not yet kept)."""
    held = dict(store.ledger_fact_records(session.db, task_id))
    for path, body in offered.items():
        uid = path.rsplit("/", 1)[-1].removesuffix(".json")
        if path == fact_path(uid, CHECKPOINT):
            held.setdefault(uid, (CHECKPOINT, body))
    by_commit: dict[str, list[Fact]] = {}
    for fact in _checkpoint_facts(held):
        if fact.get("task") == task_id:
            by_commit.setdefault(str(fact.get("commit")), []).append(fact)
    return by_commit


def mismatch(candidates: list[Fact], actual: Mapping[str, Any]) -> str | None:
    """Why no attestation of `candidates` vouches for the commit described by `actual` (None:
    one does, field for field)."""
    if not candidates:
        return (
            f"no attestation signed by a member of the task names commit "
            f"{str(actual.get('commit'))[:12]} (someone the task does not admit pushed it, or "
            "an older Pitstop did: its author's next push attests it)"
        )
    first: str | None = None
    for fact in candidates:
        differs = [name for name in _FIELDS if fact.get(name) != actual.get(name)]
        if not differs:
            return None
        first = first or differs[0]
    return f"{_FIELDS[str(first)]} differs from what its author signed"


def manifest_mismatch(manifest: Mapping[str, Any], actual: Mapping[str, Any]) -> str | None:
    """Why the snapshot trees inside the decrypted manifest are not the commit's (None: they
    are)."""
    section = manifest.get("snapshot")
    recorded = section if isinstance(section, dict) else {}
    for name, shown in (("worktree_tree", "worktree/"), ("index_tree", "index/")):
        if not actual.get(name) or recorded.get(name) != actual.get(name):
            return f"its {shown} tree is not the one its sealed manifest records"
    return None
