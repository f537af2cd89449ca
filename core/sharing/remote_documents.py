"""The plain documents a remote carries, checked field by field: `task.json`, `checkpoint.json`,
an evidence `item.json`, and the sealed content they open to.

Each check returns a clean copy holding only values of the shape Pitstop writes (times
normalised, numbers finite and in range, enums known, ids well-formed, sizes bounded), or raises
`RemoteFormatError` with one line: what an importer then uses can never be a `NaN` consumption,
an exit code of `"0; rm -rf"`, a column name an attacker chose, or a header for another task.
Fields this version does not know are kept as they are but never read here.
The byte caps of every file are here too, so that each is read with its cap (DESIGN §6.7).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from core.models import CheckpointReason, TaskStatus
from core.sharing import remote_input as check
from core.sharing.layout import CHECKPOINT_SCHEMA, TASK_SCHEMA
from core.sharing.remote_input import RemoteFormatError

KIB = 1024
MIB = 1024 * KIB
# What one file of a remote may weigh; larger ones are refused unread.
HEADER_CAP = 64 * KIB  # task.json
FACT_CAP = 1 * MIB  # one ledger fact
KEY_CAP = 256 * KIB  # keys/data-key.age: the data key wrapped for every recipient
CHECKPOINT_CAP = 256 * KIB  # checkpoint.json
ITEM_CAP = 64 * KIB  # an evidence item.json
CHECKPOINT_HEADER_CAP = 256 * KIB  # a checkpoint's pitstop.json
NOTE_CAP = 1 * MIB  # a sealed note
MANIFEST_CAP = 64 * MIB  # a sealed manifest (one line per file of a large repository)
EVIDENCE_BLOB_CAP = 4 * MIB  # an evidence item's sealed command or tail
CHUNK_CAP = 16 * MIB  # one sealed chunk of evidence output (1 MiB by default)
PACK_CAP = 512 * MIB  # a sealed worktree pack
# How many entries a remote list may hold.
MAX_CHECKPOINTS = 4096
MAX_RECIPIENTS = 1024
MAX_EVIDENCE = 10_000
MAX_CHUNKS = 100_000
MAX_SEQ = 10_000_000
SEALED_TEXT = 48 * MIB  # a sealed envelope's base64 (its file's cap bounds it further)

_EVIDENCE_COLUMNS_PLAIN = frozenset(
    {
        "state", "source", "started_at", "duration_ms", "exit_code", "signal", "timed_out",
        "bytes_total", "lines_total", "sha256", "stored_bytes", "kept_bytes", "truncated",
        "omitted_bytes", "chunk_count", "tail_lines", "redactions", "ruleset", "cap_bytes",
    }
)  # fmt: skip
_EVIDENCE_COUNTS = (
    "bytes_total", "lines_total", "stored_bytes", "kept_bytes", "omitted_bytes", "tail_lines",
    "redactions", "cap_bytes",
)  # fmt: skip
_EVIDENCE_TEXT_LIMITS = {"label": 1024, "summary": 256 * KIB, "failure": 4096}
EVIDENCE_BLOBS = frozenset({"command", "tail"})
_CHUNK_COUNTS = ("offset", "raw_len", "first_line", "line_count", "stored_len")
T = TypeVar("T")
_SOURCE = re.compile(r"[a-z][a-z0-9_-]{0,31}")  # how an item was recorded: `run`, `file`…
# A recipient as Pitstop writes it (normalised): an age key or an ssh-ed25519 key, never words.
_RECIPIENT = re.compile(r"age1[02-9ac-hj-np-z]{58}|ssh-ed25519 [A-Za-z0-9+/]{1,4000}={0,2}")
# What a task header carries only sealed: the text a person or an agent wrote.
SEALED_ONLY = frozenset(
    {"objective", "harness", "harness_version", "model", "model_version", "credentials",
     "approvers", "label", "labels", "note", "branch"}
)  # fmt: skip


class _Fields:
    """The fields of one remote document, each checked under a name that says where it is."""

    def __init__(self, document: Mapping[str, Any], what: str) -> None:
        self.document = document
        self.what = what

    def __call__(
        self, name: str, checker: Callable[..., T], *args: Any, default: Any = None, **kw: Any
    ) -> T:
        """`checker(value, "<document>: <name>", *args, **kw)` of the field `name`."""
        return checker(self.document.get(name, default), f"{self.what}: {name}", *args, **kw)

    def optional(self, name: str, checker: Callable[..., T], *args: Any, **kw: Any) -> T | None:
        """The field `name` checked, or None when it is absent or null."""
        return None if self.document.get(name) is None else self(name, checker, *args, **kw)


def parse_task_header(raw: bytes | None, task_id: str | None = None) -> dict[str, Any]:
    """A ledger commit's plain `task.json` (empty for none), checked; `task_id`: the task the
    ref names, which the header must be for."""
    if not raw:
        return {}
    header = check.parse_object(raw, "a remote task header", HEADER_CAP)
    schema = header.get("schema")
    if schema != TASK_SCHEMA:
        raise RemoteFormatError(
            f"a remote task uses schema {check.shown(schema, 40)}, not {TASK_SCHEMA!r}; "
            "upgrade pitstop"
        )
    what = f"task {task_id}'s header" if task_id else "a remote task header"
    field = _Fields(header, what)
    claimed = field("task", check.task_id)
    if task_id is not None and claimed != task_id:
        raise RemoteFormatError(f"{what} is for task {check.shown(claimed)}; it is ignored")
    recipients = field("recipients", check.items, default=[], limit=MAX_RECIPIENTS)
    clean = dict(header)  # every field kept, for its signature; only the checked ones are read
    clean.update(
        task=claimed,
        origin_store=field("origin_store", check.store_id),
        status=field("status", _choice(TaskStatus)),
        created_at=field("created_at", check.timestamp),
        updated_at=field("updated_at", check.timestamp),
        budget=_budget(field("budget", check.mapping, default={}, limit=8), what),
        tokens_used=field("tokens_used", check.integer, default=0),
        usd_used=field("usd_used", check.number, default=0.0),
        checkpoints=_listed_checkpoints(header.get("checkpoints", []), what),
        recipients=[check.pattern(r, f"{what}: a recipient", _RECIPIENT, 4096) for r in recipients],
        sealed=field("sealed", check.sealed, HEADER_CAP),
    )
    for name in ("harness", "harness_version", "model", "model_version"):
        # an older Pitstop wrote these in clear: still checked (a control character refuses
        # the header), never read (`plain_free_text`; the sealed part holds them)
        field.optional(name, check.text)
    if "sealed_fp" in header:
        clean["sealed_fp"] = field("sealed_fp", check.hex_digest, (32, 64))
    return clean


def plain_free_text(header: Mapping[str, Any]) -> str | None:
    """One line naming the free-text fields a task header carries in clear, or None.

    Pitstop reads a task's objective, harness, model, credentials and approvers only from the
    sealed part: in clear they are someone's words offered to every reader of the remote (an
    older Pitstop put the harness and model there, or a writer means them to be taken), so they
    are never read, stored or shown, and the fetch says so.
    """
    found = sorted(name for name in SEALED_ONLY if header.get(name) is not None)
    if not found:
        return None
    return (
        f"its task header carries {', '.join(found)} in clear; ignored (a task's text is read "
        "only from the sealed part of its header)"
    )


def _choice(kind: type[check.E]) -> Callable[[object, str], str]:
    """A checker of one enum's values."""
    return lambda value, what: str(check.choice(kind, value, what).value)


def _budget(budget: Mapping[str, Any], what: str) -> dict[str, Any]:
    field = _Fields(budget, f"{what}: budget")
    return {
        "tokens": field.optional("tokens", check.integer),
        "usd": field.optional("usd", check.number),
        "minutes": field.optional("minutes", check.number),
    }


def _listed_checkpoints(value: object, what: str) -> list[dict[str, Any]]:
    listed = []
    for entry in check.items(value, f"{what}: checkpoints", limit=MAX_CHECKPOINTS):
        field = _Fields(
            check.mapping(entry, f"{what}: a checkpoint", limit=16), f"{what}: a checkpoint"
        )
        listed.append(
            {
                "seq": field("seq", check.integer, minimum=1, maximum=MAX_SEQ),
                "created_at": field("created_at", check.timestamp),
                "reason": field("reason", _choice(CheckpointReason)),
                "commit": field("commit", check.object_id),
            }
        )
    return listed


def header_or_empty(raw: bytes | None, task_id: str) -> dict[str, Any]:
    """`parse_task_header`, or empty when it is refused (the import reports why)."""
    try:
        return parse_task_header(raw, task_id)
    except RemoteFormatError:
        return {}


def task_content(document: object, task_id: str) -> dict[str, Any]:
    """The sealed part of a task header, once opened: objective, harness and model (names and
    versions), credentials, approvers."""
    what = f"task {task_id}'s sealed header"
    field = _Fields(check.mapping(document, what), what)
    credentials = field("credentials", check.items, default=[], limit=256)
    approvers = field("approvers", check.items, default=[], limit=256)
    content: dict[str, Any] = {
        "objective": field("objective", check.text, limit=64 * KIB, multiline=True),
        "credentials": [check.text(c, f"{what}: a credential name") for c in credentials],
        "approvers": [check.text(a, f"{what}: an approver") for a in approvers],
    }
    for name in ("harness", "harness_version", "model", "model_version"):
        content[name] = field.optional(name, check.text)
    return content


def checkpoint_facts(raw: bytes, oid: str, task_id: str | None = None) -> dict[str, Any]:
    """A checkpoint commit's plain `checkpoint.json`, checked (for `task_id`, when given)."""
    what = f"remote checkpoint commit {oid[:12]}"
    facts = check.parse_object(raw, f"{what}'s checkpoint.json", CHECKPOINT_CAP)
    schema = facts.get("schema")
    if schema != CHECKPOINT_SCHEMA:
        raise RemoteFormatError(
            f"{what} uses schema {check.shown(schema, 40)}, not {CHECKPOINT_SCHEMA!r}; "
            "upgrade pitstop"
        )
    field = _Fields(facts, what)
    claimed = field("task", check.task_id)
    if task_id is not None and claimed != task_id:
        raise RemoteFormatError(f"{what} belongs to task {check.shown(claimed)}, not {task_id}")
    listed = field("evidence", check.items, default=[], limit=MAX_EVIDENCE)
    evidence = [check.integer(i, f"{what}: an evidence id", minimum=1) for i in listed]
    if len(set(evidence)) != len(evidence):
        raise RemoteFormatError(f"{what} lists an evidence item twice")
    clean = dict(facts)
    clean.update(
        task=claimed,
        seq=field("seq", check.integer, minimum=1, maximum=MAX_SEQ),
        origin_store=field("origin_store", check.store_id),
        reason=field("reason", _choice(CheckpointReason)),
        created_at=field("created_at", check.timestamp),
        completed_at=field.optional("completed_at", check.timestamp),
        creation_ms=field.optional("creation_ms", check.integer),
        bytes_added=field.optional("bytes_added", check.integer),
        changed_count=field("changed_count", check.integer, default=0),
        left_out_count=field("left_out_count", check.integer, default=0),
        manifest_sha256=field("manifest_sha256", check.hex_digest),
        base_commit=field.optional("base_commit", check.object_id),
        worktree=field("worktree", check.one_of, ("plain", "sealed"), default="plain"),
        evidence=evidence,
        sealed=field("sealed", check.sealed, CHECKPOINT_CAP),
    )
    return clean


def checkpoint_content(document: object, what: str) -> dict[str, Any]:
    """The sealed part of `checkpoint.json`, once opened: branch, and a sealed pack's trees."""
    field = _Fields(check.mapping(document, f"{what}'s sealed facts"), what)
    return {
        "branch": field.optional("branch", check.text, limit=1024),
        "worktree_tree": field.optional("worktree_tree", check.object_id),
        "index_tree": field.optional("index_tree", check.object_id),
    }


def evidence_item(raw: bytes, origin_id: int, task_id: str) -> dict[str, Any]:
    """An evidence item's `item.json`, checked: its plain columns and its chunks' index."""
    what = f"evidence {origin_id} of {task_id}"
    item = check.parse_object(raw, f"{what}'s item.json", ITEM_CAP)
    claimed = _Fields(item, what)("origin_id", check.integer, minimum=1)
    if claimed != origin_id:
        raise RemoteFormatError(f"{what} is filed as evidence {claimed}; the remote is damaged")
    plain = check.mapping(item.get("plain"), f"{what}: plain")
    check.only_keys(plain, f"{what}: plain", _EVIDENCE_COLUMNS_PLAIN)
    field = _Fields(plain, what)
    columns: dict[str, Any] = {
        "state": field("state", check.one_of, ("complete",)),
        "source": field("source", check.pattern, _SOURCE, 32),
        "started_at": field("started_at", check.timestamp),
        "exit_code": field.optional("exit_code", check.integer, minimum=-(2**31), maximum=2**31),
        "signal": field.optional("signal", check.integer, maximum=1024),
        "timed_out": field("timed_out", check.flag, default=0),
        "truncated": field("truncated", check.flag, default=0),
        "sha256": field.optional("sha256", check.hex_digest),
        "chunk_count": field("chunk_count", check.integer, default=0, maximum=MAX_CHUNKS),
        "ruleset": field.optional("ruleset", check.text),
    }
    columns["duration_ms"] = field.optional("duration_ms", check.integer)
    for name in _EVIDENCE_COUNTS:
        columns[name] = field(name, check.integer)
    return {
        "origin_id": origin_id,
        "plain": columns,
        "chunks": _chunks(item.get("chunks", []), what),
        "sealed": _Fields(item, what)("sealed", check.sealed, ITEM_CAP),
    }


def _chunks(value: object, what: str) -> list[dict[str, Any]]:
    chunks = []
    for entry in check.items(value, f"{what}: chunks", limit=MAX_CHUNKS):
        field = _Fields(check.mapping(entry, f"{what}: a chunk", limit=16), f"{what}: a chunk")
        clean: dict[str, Any] = {
            "seq": field("seq", check.integer, maximum=MAX_CHUNKS),
            "part": field("part", check.one_of, ("head", "tail")),
        }
        for name in _CHUNK_COUNTS:
            clean[name] = field(name, check.integer)
        chunks.append(clean)
    if len({c["seq"] for c in chunks}) != len(chunks):
        raise RemoteFormatError(f"{what} lists a chunk twice")
    return chunks


def evidence_text(document: object, what: str) -> dict[str, Any]:
    """The sealed text columns of an evidence item, once opened: label, summary, failure."""
    text = check.mapping(document, f"{what}'s sealed text", limit=len(_EVIDENCE_TEXT_LIMITS))
    check.only_keys(text, f"{what}'s sealed text", frozenset(_EVIDENCE_TEXT_LIMITS))
    field = _Fields(text, what)
    clean = {
        name: field.optional(name, check.text, limit=limit, multiline=True)
        for name, limit in _EVIDENCE_TEXT_LIMITS.items()
        if name in text
    }
    if clean.get("summary") is not None:  # a JSON object whose `text` a list shows
        summary = check.parse_object(str(clean["summary"]).encode(), f"{what}: summary", 256 * KIB)
        check.text(summary.get("text"), f"{what}: summary text", limit=4096)
    return clean


def evidence_blob_name(name: str, what: str) -> str:
    """The column a sealed evidence file fills (`command` or `tail`), never another."""
    if name not in EVIDENCE_BLOBS:
        raise RemoteFormatError(f"{what} has an unknown file {check.shown(name, 40)}")
    return name


def cap_of(path: str, caps: Mapping[str, int], default: int) -> int:
    """The byte cap of a file by its path: the longest matching prefix in `caps`."""
    best = max((p for p in caps if path.startswith(p)), key=len, default=None)
    return caps[best] if best is not None else default
