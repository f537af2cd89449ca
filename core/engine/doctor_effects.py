"""`pitstop doctor`'s check of the side-effect ledger against the checkpoints' manifests.

Every manifest carries the task's side-effect ledger as it stood. A database that lost
committed rows (a damaged or dropped WAL) can lose an effect the checkpoints still name, and an
effect the ledger does not know is one the guard would let run again (invariant 3). The newest
manifests (the task's checkpoint ref, and the commits `--fix` kept under `refs/pitstop/lost/`)
are read and each key they name that the effects table lacks is reported; `--fix` records it
again: `confirmed` as confirmed (it happened; nothing runs it again), anything else as
`uncertain`, so no resume goes on until an operator settles it.
"""

from __future__ import annotations

import json
from pathlib import Path

from core import clock, store
from core.engine.doctor_finding import Finding
from core.errors import PitstopError
from core.models import EffectState, SideEffect
from core.session import Session
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

_LOST_REF = "refs/pitstop/lost/"


def lost_effect_findings(session: Session) -> list[Finding]:
    """Effects the newest manifests of each task name and the database no longer holds."""
    findings: list[Finding] = []
    # Tasks made here only: a fetched task's effects come from its remote ledger's facts, which
    # its roster admits or refuses; a manifest must not bring back what the roster refused.
    own = session.db.execute(
        "SELECT id, store_repo FROM tasks WHERE origin_store IS NULL ORDER BY id"
    ).fetchall()
    for task_id, store_repo in own:
        known = {effect.key for effect in store.list_effects(session.db, task_id, keys=None)}
        named = _named_effects(session, task_id, session.paths.repos / store_repo)
        for key, (seq, entry) in sorted(named.items()):
            if key in known:
                continue
            state = str(entry.get("state"))
            becomes = _recorded_state(state)
            findings.append(
                Finding(
                    "lost-effect",
                    f"the database lost side effect {key!r} of task {task_id}, {state} in "
                    f"checkpoint {task_id}@{seq}'s manifest (a damaged or dropped WAL); --fix "
                    f"records it again as {becomes.value} so that nothing repeats it",
                    lambda task_id=task_id, entry=entry, seq=seq: _record_again(  # type: ignore[misc]
                        session, task_id, entry, seq
                    ),
                    task_id,
                )
            )
    return findings


def _recorded_state(state: str) -> EffectState:
    """What a lost effect is recorded as: done stays done, the rest is not known any more."""
    return EffectState.CONFIRMED if state == EffectState.CONFIRMED.value else EffectState.UNCERTAIN


def _named_effects(
    session: Session, task_id: str, store_repo: Path
) -> dict[str, tuple[int, dict[str, Any]]]:
    """Key → (seq, manifest entry) from the newest manifest naming each key; a manifest that
    cannot be read (no key, damaged) names nothing here (other checks say why)."""
    from core import snapshot
    from core.git.refs import read_ref

    if not (store_repo / "objects").is_dir():
        return {}
    tips = [tip for tip, _seq in snapshot.checkpoint_ref_seqs(store_repo, task_id).values()]
    lost = read_ref(store_repo, _LOST_REF + task_id)
    named: dict[str, tuple[int, dict[str, Any]]] = {}
    for commit in [*tips, *([lost] if lost else [])]:
        read = _manifest_of(session, task_id, store_repo, commit)
        if read is None:
            continue
        seq, document = read
        for entry in document.get("side_effects") or []:
            key = entry.get("key") if isinstance(entry, dict) else None
            if isinstance(key, str) and (key not in named or named[key][0] < seq):
                named[key] = (seq, entry)
    return named


def _manifest_of(
    session: Session, task_id: str, store_repo: Path, commit: str
) -> tuple[int, dict[str, Any]] | None:
    """The checkpoint number and opened manifest of a checkpoint commit, or None."""
    from core import snapshot
    from core.security.crypto import DecryptError, MasterKeyError
    from core.snapshot import manifest

    try:
        header = json.loads(snapshot.read_blob(store_repo, commit, "pitstop.json"))
        seq = int(header["seq"])
        sealed = snapshot.read_blob(store_repo, commit, snapshot.MANIFEST_FILE)
        plain = session.keys.open(
            task_id, f"checkpoint/{seq}/manifest", sealed, f"the manifest of {task_id}@{seq}"
        )
        return seq, manifest.parse(plain, f"{task_id}@{seq}")
    except (PitstopError, MasterKeyError, DecryptError, ValueError, KeyError, TypeError):
        return None


def _record_again(session: Session, task_id: str, entry: dict[str, Any], seq: int) -> str:
    """Insert the lost effect from its manifest entry (in Pitstop's words for the audit)."""
    key = str(entry["key"])
    state = _recorded_state(str(entry.get("state")))
    now = clock.now_iso()
    target = entry.get("target")
    effect = SideEffect(
        task_id=task_id,
        key=key,
        kind=str(entry.get("kind") or "unknown"),
        state=state,
        created_at=str(entry.get("updated_at") or now),
        updated_at=now,
        target=target if isinstance(target, str) else None,
        needs_approval=bool(entry.get("needs_approval")),
        attempts=int(entry.get("attempts") or 0),
        note=f"recorded again by pitstop doctor from {task_id}@{seq}'s manifest",
    )
    with write_txn(session.db):
        store.insert_effect(session.db, effect, session.keys)
    return f"recorded side effect {key!r} of task {task_id} again as {state.value}"
