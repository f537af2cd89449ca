"""The checkpoint manifest (`pitstop.manifest/1`) and its plain header, built from facts.

The manifest is portable JSON: exact execution state, not chat memory. Sections that later
capabilities fill (evidence, side effects, approvals, upstream resources) are present and empty
so that readers never have to guess whether a key is missing or simply has nothing in it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

from core.errors import DamagedCheckpointError, SchemaTooNewError
from core.models import ChangedFile, CheckpointReason, NamedVersion, Task
from core.store import MANIFEST_SCHEMA

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any
if TYPE_CHECKING:  # reading a manifest (`parse`) needs none of how a snapshot is taken
    from core.snapshot.source import RepoFacts
    from core.snapshot.take import Snapshot

HEADER_SCHEMA = "pitstop.checkpoint/1"


def environment_identity(git_version: str) -> dict[str, str]:
    """The machine a checkpoint was made on: OS, arch, Python and git versions.

    From `os.uname()` and `sys.version`, the same values `platform` and `socket` give, without
    importing them on every checkpoint a harness hook takes.
    """
    machine = os.uname()
    return {
        "os": machine.sysname,
        "os_release": machine.release,
        "arch": machine.machine,
        "python": sys.version.split()[0],
        "git": git_version,
        "hostname": machine.nodename,
    }


def _named(value: NamedVersion | None) -> dict[str, str | None] | None:
    return {"name": value.name, "version": value.version} if value else None


def harness_section(
    task: Task, session: dict[str, Any] | None = None
) -> dict[str, str | None] | None:
    """The manifest's `harness`: name and version, plus the recorded session where there is one.

    `session_id` lets a resume continue the same conversation; `transcript_path` lets
    validation check that the conversation still exists.
    """
    section = _named(task.harness)
    if session is None:
        return section
    return {
        **(section or {"name": session.get("harness"), "version": None}),
        "session_id": session.get("session_id"),
        "transcript_path": session.get("transcript_path"),
    }


def build_manifest(
    *,
    task: Task,
    seq: int,
    reason: CheckpointReason,
    note: str | None,
    created_at: str,
    parent_commit: str | None,
    snapshot: Snapshot,
    facts: RepoFacts,
    changed: Sequence[ChangedFile],
    lockfiles: dict[str, str],
    credentials: list[dict[str, Any]],
    done: Sequence[str],
    todo: Sequence[str],
    tokens_used: int,
    usd_used: float,
    minutes_used: float,
    environment: dict[str, str],
    max_file_bytes: int,
    creation_ms: int,
    evidence: Sequence[dict[str, Any]] = (),
    harness_session: dict[str, Any] | None = None,
    toplevel: str | None = None,
) -> dict[str, Any]:
    """Assemble the manifest document for one checkpoint.

    `toplevel` is the directory snapshot (a resume's worktree once the task moved there);
    the task's repository when not given.
    """
    return {
        "schema": MANIFEST_SCHEMA,
        "task": {"id": task.id, "objective": task.objective},
        "checkpoint": {
            "seq": seq,
            "reason": reason.value,
            "note": note,
            "created_at": created_at,
            "parent_commit": parent_commit,
        },
        "repository": {
            "toplevel": toplevel or task.repo_root,
            "remotes": dict(facts.remotes),
            "base_commit": snapshot.base_commit,
            "branch": snapshot.branch,
            "upstream": {"name": facts.upstream, "head": facts.upstream_head},
        },
        "snapshot": {
            "worktree_tree": snapshot.worktree_tree,
            "index_tree": snapshot.index_tree,
            "submodules": [{"path": p, "commit": c} for p, c in snapshot.submodules],
            "changed_files": [change._asdict() for change in changed],
            "max_file_bytes": max_file_bytes,
            # tracked files holding a secret, stored sealed (restored from here), and files
            # kept as they are though they hold one (`--allow-secret`, audited)
            "sealed": _sealed_entries(snapshot),
            "allowed_secrets": [item._asdict() for item in snapshot.allowed],
        },
        "steps": {"done": list(done), "todo": list(todo)},
        "harness": harness_section(task, harness_session),
        "model": _named(task.model),
        "budget": {
            "tokens": {"limit": task.budget.tokens, "used": tokens_used},
            "usd": {"limit": task.budget.usd, "used": usd_used},
            "minutes": {"limit": task.budget.minutes, "used": round(minutes_used, 2)},
        },
        "environment": environment,
        "credentials": credentials,
        "lockfiles": lockfiles,
        "upstream_resources": [],
        "pending_approvals": [],
        "side_effects": [],
        "evidence": list(evidence),
        "left_out": [item._asdict() for item in snapshot.left_out],
        "stats": {"creation_ms": creation_ms, "snapshot_bytes_added": snapshot.bytes_added},
    }


def _sealed_entries(snapshot: Snapshot) -> list[dict[str, Any]]:
    from core.snapshot.sealed_files import to_manifest

    return to_manifest(snapshot.sealed)


def encode(document: dict[str, Any]) -> bytes:
    """Canonical bytes of a JSON document (sorted keys) so hashes are reproducible."""
    return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False).encode() + b"\n"


def parse(plain: bytes, ref: str) -> dict[str, Any]:
    """Read a decrypted manifest, refusing a schema this Pitstop does not know (never half-read)."""
    try:
        document = json.loads(plain)
    except ValueError as exc:
        raise DamagedCheckpointError(f"the manifest of {ref} is not valid JSON") from exc
    schema = document.get("schema") if isinstance(document, dict) else None
    if schema != MANIFEST_SCHEMA:
        raise SchemaTooNewError(
            f"checkpoint {ref} has manifest schema {schema!r}, which this Pitstop does not read "
            f"({MANIFEST_SCHEMA}); upgrade pitstop"
        )
    result: dict[str, Any] = document
    return result


def build_header(
    *, task_id: str, seq: int, created_at: str, manifest_sha256: str, key_ids: list[str]
) -> dict[str, Any]:
    """The plain `pitstop.json` header: what a listing needs, and no content."""
    return {
        "schema": HEADER_SCHEMA,
        "task": task_id,
        "seq": seq,
        "created_at": created_at,
        "manifest_sha256": manifest_sha256,
        "manifest_encrypted": True,
        "key_ids": key_ids,
    }


def evidence_entry(row: dict[str, Any]) -> dict[str, Any]:
    """How the manifest indexes one evidence item: facts and a pointer, never the output."""
    return {
        "id": row["id"],
        "label": row["label"],
        "exit_code": row["exit_code"],
        "signal": row["signal"],
        "timed_out": row["timed_out"],
        "started_at": row["started_at"],
        "duration_ms": row["duration_ms"],
        "bytes": row["bytes_total"],
        "lines": row["lines_total"],
        "sha256": row["sha256"],
        "truncated": row["truncated"],
        "summary": row["summary"],
        "show": f"pitstop evidence show {row['id']}",
    }
