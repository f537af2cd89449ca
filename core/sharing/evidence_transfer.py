"""Evidence on a remote: which columns travel in clear, which sealed, and how a fetched item is
re-bound to this store.

Sealed evidence blobs are bound to their item's id (`evidence/<id>/<column>`). Ids are local to
a store, so a fetched item gets a new id here and each of its blobs is opened under the origin
id and sealed again under the new one. A fetched item is checked first
(`remote_documents.evidence_item`): its columns are only those this store knows, with values of
their type (an exit code is an integer, a hash is hex), and its files are read with caps.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from core import store
from core.git import plumbing
from core.redaction.free_text import persistable
from core.sharing import remote_documents as docs
from core.sharing.layout import RemoteFormatError, canonical
from core.sharing.remote_reads import read_capped
from core.sharing.sealing import open_json, seal_json

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.session import Session

# Evidence columns that travel in clear: what a listing counts and sorts, never content.
EVIDENCE_PLAIN = (
    "state",
    "source",
    "started_at",
    "duration_ms",
    "exit_code",
    "signal",
    "timed_out",
    "bytes_total",
    "lines_total",
    "sha256",
    "stored_bytes",
    "kept_bytes",
    "truncated",
    "omitted_bytes",
    "chunk_count",
    "tail_lines",
    "redactions",
    "ruleset",
    "cap_bytes",
)
# Columns that only mean something in the store that wrote them.
EVIDENCE_LOCAL = ("id", "task_id", "checkpoint_seq")
CHUNK_PLAIN = ("seq", "part", "offset", "raw_len", "first_line", "line_count", "stored_len")


def export_evidence(
    session: Session, task_id: str, origin_id: int, row: Mapping[str, Any]
) -> dict[str, bytes]:
    """One evidence item as files: plain facts, sealed text, sealed blobs and chunks."""
    base = f"evidence/{origin_id}/"
    files: dict[str, bytes] = {}
    plain = {name: row[name] for name in EVIDENCE_PLAIN if name in row}
    # the label is sealed here under the item's local id: opened, it travels in the sealed text
    text: dict[str, Any] = {"label": store.opened_label(session.keys, row)}
    for name, value in row.items():
        if name in EVIDENCE_PLAIN or name in EVIDENCE_LOCAL or name == "label":
            continue
        if isinstance(value, bytes | bytearray | memoryview):
            files[f"{base}{name}.enc"] = bytes(value)
        else:
            text[name] = value
    sealed, _ = seal_json(session, task_id, f"remote/evidence/{origin_id}", text)
    chunks = []
    for chunk in store.chunk_rows_for_export(session.db, origin_id):
        chunks.append({name: chunk[name] for name in CHUNK_PLAIN})
        files[f"{base}chunks/{int(chunk['seq']):06d}.enc"] = bytes(chunk["blob"])
    files[f"{base}item.json"] = canonical(
        {"origin_id": origin_id, "plain": plain, "chunks": chunks, "sealed": sealed}
    )
    return files


def read_evidence(
    session: Session, store_repo: Path, task_id: str, oid: str, facts: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The evidence of a fetched checkpoint, opened enough to be re-bound to local rows."""
    ids = [int(i) for i in facts.get("evidence", [])]
    if not ids:
        return []
    entries = plumbing.list_tree(store_repo, oid, "evidence/")
    listed = {f"evidence/{i}/" for i in ids}
    wanted = {
        path: blob
        for path, (kind, blob) in entries.items()
        if kind == "blob" and path[: path.find("/", len("evidence/")) + 1] in listed
    }
    caps = {blob: _cap(path) for path, blob in wanted.items()}
    data = read_capped(store_repo, caps, f"the evidence of {task_id}")
    return [_read_item(session, task_id, origin_id, wanted, data) for origin_id in ids]


def _cap(path: str) -> int:
    """The byte cap of one file of an evidence item."""
    if path.endswith("/item.json"):
        return docs.ITEM_CAP
    return docs.CHUNK_CAP if "/chunks/" in path else docs.EVIDENCE_BLOB_CAP


def _read_item(
    session: Session,
    task_id: str,
    origin_id: int,
    wanted: Mapping[str, str],
    data: Mapping[str, bytes | None],
) -> dict[str, Any]:
    """One fetched evidence item from the checkpoint's files (path → blob, blob → bytes)."""
    base = f"evidence/{origin_id}/"
    raw = data.get(wanted.get(f"{base}item.json", ""))
    if raw is None:
        raise RemoteFormatError(f"evidence {origin_id} of {task_id} is missing on the remote")
    item = docs.evidence_item(raw, origin_id, task_id)
    what = f"evidence {origin_id} of {task_id}"
    text = docs.evidence_text(
        open_json(session, task_id, f"remote/evidence/{origin_id}", item["sealed"], what), what
    )
    blobs = {}
    for path, blob in wanted.items():
        if path.startswith(base) and path.endswith(".enc") and "/chunks/" not in path:
            name = docs.evidence_blob_name(path[len(base) : -len(".enc")], what)
            blobs[name] = data[blob]
    chunks = []
    for chunk in item["chunks"]:
        blob_data = data.get(wanted.get(f"{base}chunks/{int(chunk['seq']):06d}.enc", ""))
        if blob_data is None:
            raise RemoteFormatError(f"a chunk of evidence {origin_id} is missing")
        chunks.append({**chunk, "blob": blob_data})
    return {
        "origin_id": origin_id,
        "plain": item["plain"],
        "text": text,
        "blobs": blobs,
        "chunks": chunks,
    }


def insert_evidence(session: Session, task_id: str, seq: int, item: Mapping[str, Any]) -> None:
    """Store one fetched evidence item under a new local id, re-binding its sealed blobs."""
    origin_id = int(item["origin_id"])
    text = dict(item["text"])
    label = text.pop("label", None)
    columns = {**item["plain"], **text, "task_id": task_id, "checkpoint_seq": seq}
    new_id = store.insert_evidence(session.db, **columns)
    if label:  # another store's words: redacted, then sealed under the new id
        store.set_evidence_label(session.db, session.keys, task_id, new_id, persistable(label))

    def rebind(name: str, envelope: bytes) -> bytes:
        plain = session.keys.open(
            task_id, f"evidence/{origin_id}/{name}", envelope, f"fetched evidence {origin_id}"
        )
        return session.keys.seal(task_id, f"evidence/{new_id}/{name}", plain)

    blob_columns = {name: rebind(name, envelope) for name, envelope in item["blobs"].items()}
    if blob_columns:
        store.update_evidence(session.db, new_id, **blob_columns)
    for chunk in item["chunks"]:
        columns = {name: chunk[name] for name in CHUNK_PLAIN}
        columns["blob"] = rebind(f"chunk/{int(chunk['seq'])}", chunk["blob"])
        store.insert_chunk(session.db, new_id, **columns)
