"""Remote checkpoints: share tasks through a git remote, readable only by their recipients.

Two refs per task (DESIGN §6):

- `refs/pitstop/checkpoints/<task>`: one commit per checkpoint, first parent the previous one,
  second parent the base commit. Its tree holds the plain `pitstop.json` header, the sealed
  manifest and note, `checkpoint.json` (plain listing facts, the rest sealed), the evidence
  (every blob sealed), and `worktree/` + `index/` — plain source objects, as in the repository
  itself, so they share objects with it. A checkpoint's remote commit is built once and
  remembered, so pushing twice sends nothing.
- `refs/pitstop/ledger/<task>`: append-only commits whose tree is `task.json` (plain header;
  the objective and other text sealed), `keys/data-key.age` (the task's data key encrypted with
  age to every recipient) and `facts/` (the ledger of approvals, effects, validations, resumes
  and audit events, see `core.ledger.facts`). Ledgers merge as a union of facts.

Sealed content is bound to the task's origin store (`TaskKeys.scope`), so blobs travel
unchanged and open in every store that holds the data key. A store whose operator is not a
recipient lists the task as `no key` and imports nothing of it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import clock, snapshot, store
from core.errors import ConflictError, GitError, NotFoundError, PitstopError, UsageError
from core.git import plumbing, transport
from core.git.run import clean_env
from core.ledger import facts as ledger_facts
from core.models import Budget, CheckpointState, NamedVersion, Task, TaskStatus
from core.security import identity
from core.store.db import batch_txn, write_txn

if TYPE_CHECKING:
    from core.session import Session

TASK_SCHEMA = "pitstop.remote-task/1"
CHECKPOINT_SCHEMA = "pitstop.remote-checkpoint/1"
TASK_FILE = "task.json"
KEY_FILE = "keys/data-key.age"
FACTS_DIR = "facts/"
CHECKPOINT_FILE = "checkpoint.json"
NOTE_FILE = "note.enc"
PACK_FILE = "snapshot.pack.enc"
PREFIX = "refs/pitstop/"
KINDS = ("checkpoints", "ledger")

# Evidence columns that travel in clear: what a listing counts and sorts, never content.
_EVIDENCE_PLAIN = (
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
_EVIDENCE_LOCAL = ("id", "task_id", "checkpoint_seq")
_CHUNK_PLAIN = ("seq", "part", "offset", "raw_len", "first_line", "line_count", "stored_len")


class RemoteFormatError(PitstopError):
    """What a remote holds is not something this Pitstop can read."""


def checkpoint_ref(task_id: str) -> str:
    """The remote ref of a task's newest checkpoint."""
    return f"{PREFIX}checkpoints/{task_id}"


def ledger_ref(task_id: str) -> str:
    """The remote ref of a task's ledger."""
    return f"{PREFIX}ledger/{task_id}"


def _tracking(url: str, kind: str, task_id: str) -> str:
    """Where a remote's ref is kept in the store's repository after a fetch."""
    return f"{_tracking_root(url)}{kind}/{task_id}"


def _tracking_root(url: str) -> str:
    key = hashlib.sha256(url.encode()).hexdigest()[:12]
    return f"{PREFIX}remotes/{key}/"


def _local_ledger_ref(task_id: str) -> str:
    return f"{PREFIX}ledger/{task_id}"


def _canonical(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


# --- reports ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RemoteCheckpoint:
    """One checkpoint as a remote's plain header lists it."""

    seq: int
    created_at: str
    reason: str
    local: bool


@dataclass(frozen=True)
class RemoteTask:
    """One task on a remote, from its refs and plain headers alone."""

    task_id: str
    status: str
    created_at: str
    updated_at: str
    checkpoints: tuple[RemoteCheckpoint, ...]
    readable: bool
    local: bool
    recipients: int

    @property
    def latest(self) -> RemoteCheckpoint | None:
        return self.checkpoints[-1] if self.checkpoints else None


@dataclass
class PushResult:
    """What one push sent."""

    url: str
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class FetchResult:
    """What one fetch brought in, task by task."""

    url: str
    fetched: dict[str, dict[str, Any]] = field(default_factory=dict)
    no_key: list[str] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)


# --- where ------------------------------------------------------------------------------------


def _looks_like_url(text: str) -> bool:
    """A URL or path rather than a remote's name (git's scp-like `host:path` included)."""
    return (
        "://" in text
        or text.startswith(("/", "./", "../", "~"))
        or (":" in text.split("/", 1)[0] and not text.startswith(":"))
    )


def remote_recipients(session: Session, task_id: str) -> list[str]:
    """Whom a task's remote copy is encrypted to: its recipients and the current operator."""
    store.get_task(session.db, task_id)
    return identity.with_own_recipient(store.list_task_recipients(session.db, task_id))


def adopt_task(session: Session, task: Task, *, origin_store: str, data_key: bytes) -> Task:
    """Record a task fetched from a remote: same id, its content bound to its origin store.

    `task` carries this machine's repository (`repo_root`, `store_repo`); the data key is
    kept wrapped by this store's master key, so the task reads like one created here.
    """
    session.keys.adopt(task.id, data_key, origin_store)
    now = clock.now_iso()
    with write_txn(session.db):
        store.insert_task(session.db, task)
        store.set_task_origin(session.db, task.id, origin_store)
        session.keys.keep_adopted(task.id)
        session.record_event(task.id, "task", task.id, "adopt", None, task.status.value, None, now)
    return task


def resolve_url(session: Session, remote: str | None, repo_root: str | Path) -> str:
    """The URL behind `--remote NAME|URL` (default: the repository's own `origin`)."""
    name = remote or "origin"
    row = store.get_remote(session.db, name)
    if row is not None:
        return str(row["url"])
    if _looks_like_url(name) or Path(name).exists():
        path = Path(name).expanduser()
        return str(path.resolve()) if path.exists() else name
    proc = subprocess.run(
        ["git", "-C", str(repo_root), "remote", "get-url", name],
        capture_output=True,
        check=False,
        env=clean_env(),
    )
    if proc.returncode != 0:
        raise UsageError(
            f"no remote {name!r}: not a Pitstop remote (`pitstop remote add {name} URL`) and "
            f"not a git remote of {repo_root}"
        )
    return _anchor(proc.stdout.decode().strip(), Path(repo_root))


def _anchor(url: str, base: Path) -> str:
    """A git remote's URL usable from anywhere: a relative local path is made absolute against
    the repository (git resolves it there; Pitstop runs git from its own store)."""
    if "://" in url or url.startswith("/"):
        return url
    head = url.split("/", 1)[0]
    if ":" in head:  # scp-like `host:path` or `user@host:path`
        return url
    return str((base / url).resolve())


def add_remote(
    session: Session, name: str, url: str, repo: str | os.PathLike[str]
) -> dict[str, Any]:
    """Name a remote for a repository (`pitstop remote add NAME URL`)."""
    if not name or not all(c.isalnum() or c in "-_." for c in name):
        raise UsageError(f"invalid remote name {name!r}: use letters, digits, '-', '_', '.'")
    if snapshot.strip_url_credentials(url) != url:
        raise UsageError(
            "the URL carries a password; keep credentials in a git credential helper, "
            "not in Pitstop's store"
        )
    source = snapshot.resolve_source_repo(repo)
    if Path(url).expanduser().exists():
        url = str(Path(url).expanduser().resolve())
    now = clock.now_iso()
    with write_txn(session.db):
        store.add_remote(session.db, name, url, str(source.toplevel), now)
        session.record_event(None, "remote", name, "add", None, None, None, now)
    return {"name": name, "url": url, "repo_root": str(source.toplevel), "added_at": now}


def remove_remote(session: Session, name: str) -> None:
    """Forget a named remote (nothing on the remote changes)."""
    now = clock.now_iso()
    with write_txn(session.db):
        if not store.remove_remote(session.db, name):
            raise NotFoundError(f"no remote named {name!r}; `pitstop remote list-names` shows them")
        session.record_event(None, "remote", name, "remove", None, None, None, now)


def _store_repo(session: Session, repo: str | os.PathLike[str]) -> tuple[snapshot.SourceRepo, Path]:
    source = snapshot.resolve_source_repo(repo)
    return source, snapshot.ensure_store_repo(session.paths.repos, source)


# --- sealing helpers --------------------------------------------------------------------------


def _seal_json(session: Session, task_id: str, item: str, document: Any) -> tuple[str, str]:
    """Seal a JSON document for `item`: (base64 envelope, keyed fingerprint of the plaintext).

    The fingerprint lets a later push see that the content did not change and keep the old
    envelope, so an unchanged task adds no new objects; keyed, it reveals nothing.
    """
    plain = _canonical({"v": document})
    key = session.keys.data_key(task_id, create=True)
    fingerprint = hmac.new(key, item.encode() + b"\0" + plain, hashlib.sha256).hexdigest()[:32]
    envelope = session.keys.seal(task_id, item, plain)
    return base64.b64encode(envelope).decode(), fingerprint


def _open_json(session: Session, task_id: str, item: str, sealed: str, what: str) -> Any:
    envelope = base64.b64decode(sealed)
    return json.loads(session.keys.open(task_id, item, envelope, what))["v"]


# --- export: checkpoints ----------------------------------------------------------------------


def _export_checkpoint(
    session: Session,
    store_repo: Path,
    task: Task,
    seq: int,
    parent: str | None,
    seal_worktree: bool = False,
) -> str:
    """Build the remote commit of one local checkpoint (once; later pushes reuse it).

    With `seal_worktree`, the snapshot's objects (those its base commit does not already hold)
    travel as one sealed pack instead of the plain `worktree/` and `index/` trees.
    """
    checkpoint = store.get_checkpoint(session.db, task.id, seq)
    if checkpoint.commit is None or checkpoint.state is not CheckpointState.COMPLETE:
        raise ConflictError(f"checkpoint {task.id}@{seq} is not complete; it cannot be pushed")
    top = plumbing.top_entries(store_repo, checkpoint.commit)
    files: dict[str, bytes] = {}
    blobs = {name: top[name] for name in ("pitstop.json", snapshot.MANIFEST_FILE) if name in top}
    trees: dict[str, str] = {n: top[n] for n in ("worktree", "index") if n in top}
    if checkpoint.sealed_note:
        files[NOTE_FILE] = checkpoint.sealed_note
    content: dict[str, Any] = {"branch": checkpoint.branch}
    if seal_worktree:
        pack = plumbing.pack_objects(
            store_repo, [t for t in trees.values()], exclude=[checkpoint.base_commit or ""]
        )
        files[PACK_FILE] = session.keys.seal(task.id, f"remote/checkpoint/{seq}/pack", pack)
        content.update(worktree_tree=trees.get("worktree"), index_tree=trees.get("index"))
        trees = {}
    sealed, _fingerprint = _seal_json(session, task.id, f"remote/checkpoint/{seq}", content)
    evidence_ids = []
    for item in store.evidence_rows_for_export(session.db, task.id, seq):
        origin_id = int(item["id"])
        evidence_ids.append(origin_id)
        files.update(_export_evidence(session, task.id, origin_id, item))
    files[CHECKPOINT_FILE] = _canonical(
        {
            "schema": CHECKPOINT_SCHEMA,
            "task": task.id,
            "seq": seq,
            "origin_store": session.keys.scope(task.id),
            "reason": checkpoint.reason.value,
            "created_at": checkpoint.created_at,
            "completed_at": checkpoint.completed_at,
            "creation_ms": checkpoint.creation_ms,
            "bytes_added": checkpoint.bytes_added,
            "changed_count": checkpoint.changed_count,
            "left_out_count": checkpoint.left_out_count,
            "manifest_sha256": checkpoint.manifest_sha256,
            "base_commit": checkpoint.base_commit,
            "worktree": "sealed" if seal_worktree else "plain",
            "evidence": evidence_ids,
            "sealed": sealed,
        }
    )
    tree = plumbing.build_tree(store_repo, files, trees=trees, blob_ids=blobs)
    parents = [p for p in (parent, checkpoint.base_commit) if p]
    commit = plumbing.commit(
        store_repo,
        tree,
        parents,
        f"pitstop checkpoint {task.id}@{seq}",
        clock.git_timestamp(checkpoint.created_at),
    )
    with write_txn(session.db):
        store.record_export(session.db, task.id, seq, commit)
    return commit


def _export_evidence(
    session: Session, task_id: str, origin_id: int, row: Mapping[str, Any]
) -> dict[str, bytes]:
    """One evidence item as files: plain facts, sealed text, sealed blobs and chunks."""
    base = f"evidence/{origin_id}/"
    files: dict[str, bytes] = {}
    plain = {name: row[name] for name in _EVIDENCE_PLAIN if name in row}
    text: dict[str, Any] = {}
    for name, value in row.items():
        if name in _EVIDENCE_PLAIN or name in _EVIDENCE_LOCAL:
            continue
        if isinstance(value, bytes | bytearray | memoryview):
            files[f"{base}{name}.enc"] = bytes(value)
        else:
            text[name] = value
    sealed, _ = _seal_json(session, task_id, f"remote/evidence/{origin_id}", text)
    chunks = []
    for chunk in store.chunk_rows_for_export(session.db, origin_id):
        chunks.append({name: chunk[name] for name in _CHUNK_PLAIN})
        files[f"{base}chunks/{int(chunk['seq']):06d}.enc"] = bytes(chunk["blob"])
    files[f"{base}item.json"] = _canonical(
        {"origin_id": origin_id, "plain": plain, "chunks": chunks, "sealed": sealed}
    )
    return files


def _export_chain(
    session: Session, store_repo: Path, task: Task, seal_worktree: bool = False
) -> list[str]:
    """The remote commits of the task's checkpoints, oldest first, building any not yet built.

    A checkpoint already exported keeps its commit (history never changes under a remote),
    even if it has expired here since; `seal_worktree` applies to new ones only.
    """
    known = store.export_commits(session.db, task.id)
    present = plumbing.read_objects(store_repo, list(known.values()))  # one process for all
    chain: list[str] = []
    for checkpoint in store.list_checkpoints(session.db, task.id):
        exported = known.get(checkpoint.seq)
        if exported is not None and present.get(exported) is not None:
            chain.append(exported)
            continue
        if checkpoint.state is not CheckpointState.COMPLETE:
            continue
        parent = chain[-1] if chain else None
        chain.append(
            _export_checkpoint(session, store_repo, task, checkpoint.seq, parent, seal_worktree)
        )
    return chain


# --- export: the ledger -----------------------------------------------------------------------


def _task_header(
    session: Session,
    store_repo: Path,
    task: Task,
    recipients: list[str],
    previous: Mapping[str, Any],
) -> dict[str, Any]:
    checkpoints = []
    exports = store.export_commits(session.db, task.id)
    for checkpoint in store.list_checkpoints(session.db, task.id):
        if checkpoint.state is CheckpointState.COMPLETE and checkpoint.seq in exports:
            checkpoints.append(
                {
                    "seq": checkpoint.seq,
                    "created_at": checkpoint.created_at,
                    "reason": checkpoint.reason.value,
                    "commit": exports[checkpoint.seq],
                }
            )
    content = {
        "objective": task.objective,
        "credentials": list(task.credentials),
        "approvers": list(task.approvers),
    }
    header: dict[str, Any] = {
        "schema": TASK_SCHEMA,
        "task": task.id,
        "origin_store": session.keys.scope(task.id),
        "status": task.status.value,
        "created_at": task.created_at,
        "updated_at": task.updated_at,
        "harness": task.harness.name if task.harness else None,
        "harness_version": task.harness.version if task.harness else None,
        "model": task.model.name if task.model else None,
        "model_version": task.model.version if task.model else None,
        "budget": {
            "tokens": task.budget.tokens,
            "usd": task.budget.usd,
            "minutes": task.budget.minutes,
        },
        "tokens_used": task.tokens_used,
        "usd_used": task.usd_used,
        "checkpoints": checkpoints,
        "recipients": recipients,
    }
    sealed, fingerprint = _seal_json(session, task.id, "remote/task", content)
    header["sealed_fp"] = fingerprint
    if previous.get("sealed_fp") == fingerprint and "sealed" in previous:
        header["sealed"] = previous["sealed"]  # unchanged content keeps its envelope
    else:
        header["sealed"] = sealed
    return header


def _read_tree_files(store_repo: Path, rev: str | None) -> dict[str, bytes]:
    """Every file of a ledger commit (path → bytes); empty for None."""
    if rev is None:
        return {}
    entries = plumbing.list_tree(store_repo, rev)
    paths = [path for path, (kind, _oid) in entries.items() if kind == "blob"]
    blobs = plumbing.read_objects(store_repo, [entries[path][1] for path in paths])
    return {path: blobs[entries[path][1]] or b"" for path in paths}


def _facts_of(files: Mapping[str, bytes]) -> dict[str, bytes]:
    return {path: data for path, data in files.items() if path.startswith(FACTS_DIR)}


def _merge_facts(*sides: Mapping[str, bytes]) -> dict[str, bytes]:
    """Union of facts; a path present on several sides keeps the smallest bytes (any order
    of merges gives the same tree)."""
    merged: dict[str, bytes] = {}
    for side in sides:
        for path, data in side.items():
            if path not in merged or data < merged[path]:
                merged[path] = data
    return merged


def _blob_entries(store_repo: Path, rev: str | None) -> dict[str, str]:
    """The files of a ledger commit: path → blob id (no content read)."""
    if rev is None:
        return {}
    return {
        path: oid
        for path, (kind, oid) in plumbing.list_tree(store_repo, rev).items()
        if kind == "blob"
    }


def _ledger_commit(
    session: Session,
    store_repo: Path,
    task: Task,
    remote_tip: str | None,
    local_tip: str | None,
) -> str | None:
    """The ledger commit to push: local facts merged with the remote's; None when unchanged.

    Facts already in a ledger commit are carried by blob id, never re-read: only the header,
    the key file and facts that differ between the two sides are.
    """
    remote_entries = _blob_entries(store_repo, remote_tip)
    local_entries = _blob_entries(store_repo, local_tip) if local_tip != remote_tip else {}
    base_entries = remote_entries or local_entries
    clashes = [
        path
        for path, oid in local_entries.items()
        if path.startswith(FACTS_DIR) and remote_entries.get(path, oid) != oid
    ]
    wanted = [
        oid for oid in (base_entries.get(TASK_FILE), *(local_entries[p] for p in clashes)) if oid
    ]
    wanted += [remote_entries[p] for p in clashes]
    contents = plumbing.read_objects(store_repo, wanted)
    facts = {p: oid for p, oid in local_entries.items() if p.startswith(FACTS_DIR)}
    facts.update({p: oid for p, oid in remote_entries.items() if p.startswith(FACTS_DIR)})
    for path in clashes:  # the same fact sealed twice: keep the smaller bytes, in any order
        ours, theirs = local_entries[path], remote_entries[path]
        facts[path] = min((ours, theirs), key=lambda oid: (contents.get(oid) or b"", oid))
    exported = ledger_facts.export_facts(session, task.id)
    new_files = {path: data for path, data in exported.items() if path not in facts}
    previous_raw = contents.get(base_entries.get(TASK_FILE, ""))
    previous_header = _parse_header(previous_raw)
    recipients = sorted(
        set(remote_recipients(session, task.id)) | set(previous_header.get("recipients", []))
    )
    if not recipients:
        raise UsageError(
            f"task {task.id} has no recipients, so nobody could read it remotely; run "
            f"`pitstop key init` (creates your identity) or `pitstop task share {task.id} "
            "--recipient KEY`"
        )
    header = _canonical(_task_header(session, store_repo, task, recipients, previous_header))
    blob_ids = dict(facts)
    if previous_raw == header:
        blob_ids[TASK_FILE] = base_entries[TASK_FILE]
    else:
        new_files[TASK_FILE] = header
    previous_key = base_entries.get(KEY_FILE)
    if previous_key is not None and previous_header.get("recipients") == recipients:
        blob_ids[KEY_FILE] = previous_key
    else:
        new_files[KEY_FILE] = identity.wrap_for_recipients(
            session.keys.data_key(task.id, create=True), recipients
        )
    if not new_files and blob_ids == base_entries:
        if remote_tip is not None and (
            local_tip in (None, remote_tip)
            or plumbing.is_ancestor(store_repo, str(local_tip), remote_tip)
        ):
            return None  # the remote holds exactly this already
        if remote_tip is None and local_tip is not None:
            return local_tip  # a new remote: our last ledger commit as it is
    tree = plumbing.build_tree(store_repo, new_files, blob_ids=blob_ids)
    parents = [p for p in dict.fromkeys([local_tip, remote_tip]) if p]
    return plumbing.commit(
        store_repo, tree, parents, f"pitstop ledger {task.id}", clock.git_timestamp(clock.now_iso())
    )


def _tree_of(store_repo: Path, commit: str) -> str:
    return snapshot.tree_of_commit(store_repo, commit)


def _parse_header(raw: bytes | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        header = json.loads(raw)
    except ValueError as exc:
        raise RemoteFormatError("a remote task header is not JSON; the remote is damaged") from exc
    if not isinstance(header, dict):
        raise RemoteFormatError("a remote task header is not an object; the remote is damaged")
    schema = header.get("schema")
    if schema != TASK_SCHEMA:
        raise RemoteFormatError(
            f"a remote task uses schema {schema!r}, not {TASK_SCHEMA!r}; upgrade pitstop"
        )
    return header


# --- push -------------------------------------------------------------------------------------


def push(
    session: Session,
    task_ids: Sequence[str],
    remote: str | None = None,
    *,
    seal_worktree: bool = False,
) -> PushResult:
    """Send tasks' checkpoints and ledgers to a remote in one atomic push."""
    tasks = [store.get_task(session.db, task_id) for task_id in task_ids]
    if not tasks:
        raise UsageError("no task to push; name one (`pitstop task list` shows them)")
    groups: dict[tuple[str, str], list[Task]] = {}
    for task in tasks:
        url = resolve_url(session, remote, task.repo_root)
        groups.setdefault((url, task.store_repo), []).append(task)
    results = [
        _push_group(session, url, session.paths.repos / repo, group, seal_worktree)
        for (url, repo), group in groups.items()
    ]
    merged = PushResult(url=results[0].url)
    for result in results:
        merged.tasks.update(result.tasks)
    return merged


def _push_group(
    session: Session, url: str, store_repo: Path, tasks: list[Task], seal_worktree: bool
) -> PushResult:
    """Push on what we last saw of the remote (one connection); when someone else moved a ref
    since, the lease refuses the whole push and we fetch, merge and push again."""
    for attempt in range(3):
        try:
            with plumbing.session(store_repo):  # one cat-file for every read of the push
                return _push_once(
                    session, url, store_repo, tasks, seal_worktree, refresh=attempt > 0
                )
        except transport.RemoteMovedError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _push_once(
    session: Session,
    url: str,
    store_repo: Path,
    tasks: list[Task],
    seal_worktree: bool,
    *,
    refresh: bool,
) -> PushResult:
    if refresh:
        _fetch_tasks(store_repo, url, [t.id for t in tasks])
    refs = plumbing.refs_under(store_repo, PREFIX)
    updates: dict[str, tuple[str, str | None]] = {}
    moved: dict[str, str] = {}
    result = PushResult(url=snapshot.strip_url_credentials(url))
    # what is recorded before the push (remote commits built, ledger facts) commits once
    with batch_txn(session.db):
        for task in tasks:
            remote_cp = refs.get(_tracking(url, "checkpoints", task.id))
            remote_ledger = refs.get(_tracking(url, "ledger", task.id))
            chain = _export_chain(session, store_repo, task, seal_worktree)
            tip = chain[-1] if chain else None
            sent = 0
            if tip is not None and tip != remote_cp:
                if remote_cp is None:
                    sent = len(chain)
                elif remote_cp in chain:
                    sent = len(chain) - chain.index(remote_cp) - 1
                else:
                    tip = _reconcile_checkpoints(store_repo, task.id, tip, remote_cp, result.url)
                if tip is not None:
                    updates[checkpoint_ref(task.id)] = (tip, remote_cp)
                    moved[_tracking(url, "checkpoints", task.id)] = tip
            local_ledger = refs.get(_local_ledger_ref(task.id))
            ledger = _ledger_commit(session, store_repo, task, remote_ledger, local_ledger)
            if ledger is not None:
                updates[ledger_ref(task.id)] = (ledger, remote_ledger)
            final = ledger or remote_ledger
            if final is not None:
                moved[_local_ledger_ref(task.id)] = final
                moved[_tracking(url, "ledger", task.id)] = final
            result.tasks[task.id] = {"checkpoints_sent": sent, "ledger_updated": ledger is not None}
    transport.push(store_repo, url, updates)
    plumbing.set_refs(store_repo, moved)
    now = clock.now_iso()
    with write_txn(session.db):
        for task in tasks:
            store.link_remote(session.db, task.id, result.url, pushed_at=now)
            # Kept out of the task's own log (task_id None): a push is not part of the ledger it
            # sends, or every push would change the ledger and the next push would send again.
            session.record_event(None, "remote", task.id, "push", None, None, None, now)
    return result


def _reconcile_checkpoints(
    store_repo: Path, task_id: str, tip: str, remote_cp: str, url: str
) -> str | None:
    """Our checkpoint tip when the remote's is not in our chain: None when the remote is ahead
    (nothing of ours is missing there); a conflict when the two histories diverged."""
    if not plumbing.has_object(store_repo, remote_cp):
        raise ConflictError(
            f"the remote holds checkpoints of {task_id} that this store lacks; "
            f"run `pitstop fetch {task_id}` first"
        )
    if plumbing.is_ancestor(store_repo, remote_cp, tip):
        return tip
    if plumbing.is_ancestor(store_repo, tip, remote_cp):
        return None
    raise ConflictError(
        f"task {task_id} has checkpoints here and on {url} that diverge; "
        "resume one of them as a new task"
    )


def _fetch_tasks(
    store_repo: Path, url: str, task_ids: Sequence[str], kinds: Sequence[str] = KINDS
) -> dict[str, str]:
    """Fetch the tasks' refs of `kinds` (whichever exist) into tracking refs, pruning those the
    remote dropped, in one connection; return every Pitstop ref of the store repository after
    it (this remote's tracking refs and our own ledgers alike, read without a process)."""
    root = _tracking_root(url)
    if task_ids:
        # patterns, not exact refs: an exact one fails on a ref the remote lacks, a pattern
        # just matches nothing, so one fetch also tells which of the tasks the remote holds
        # (`l*` is `ledger`, `c*` is `checkpoints`: the only kinds under refs/pitstop/)
        stems = ["*"] if set(kinds) == set(KINDS) else [f"{kind[0]}*" for kind in kinds]
        refspecs = [f"+{PREFIX}{stem}/{t}:{root}{stem}/{t}" for t in task_ids for stem in stems]
    else:
        refspecs = [f"+{PREFIX}{kind}/*:{root}{kind}/*" for kind in kinds]
    transport.fetch(store_repo, url, refspecs, prune=True)
    return plumbing.refs_under(store_repo, PREFIX)


def _recipient_of(
    store_repo: Path, ledgers: Mapping[str, str], me: identity.Identity | None
) -> set[str]:
    """The tasks (of task → ledger commit) whose plain header lists `me` as a recipient."""
    if me is None or not ledgers:
        return set()
    raw = plumbing.read_objects(store_repo, [f"{oid}:{TASK_FILE}" for oid in ledgers.values()])
    return {
        task_id
        for task_id, oid in ledgers.items()
        if me.recipient in _parse_header(raw.get(f"{oid}:{TASK_FILE}")).get("recipients", [])
    }


# --- list -------------------------------------------------------------------------------------


def list_remote(
    session: Session, remote: str | None = None, repo: str | os.PathLike[str] = "."
) -> tuple[str, list[RemoteTask]]:
    """Tasks and checkpoints on a remote, from its refs and plain headers alone."""
    source, store_repo = _store_repo(session, repo)
    url = resolve_url(session, remote, source.toplevel)
    # One connection: fetch every ledger ref (only what moved transfers) and prune the ones
    # the remote dropped; the tracking refs then say what the remote holds.
    tracking = f"{_tracking_root(url)}ledger/"
    transport.fetch(store_repo, url, [f"+{PREFIX}ledger/*:{tracking}*"], prune=True)
    ledgers = {
        ref.removeprefix(tracking): oid
        for ref, oid in plumbing.refs_under(store_repo, tracking).items()
    }
    raw = plumbing.read_objects(store_repo, [f"{oid}:{TASK_FILE}" for oid in ledgers.values()])
    me = identity.load_identity_or_none()
    local_ids = store.task_ids(session.db)
    listing: list[RemoteTask] = []
    for task_id, oid in sorted(ledgers.items()):
        header = _parse_header(raw.get(f"{oid}:{TASK_FILE}"))
        if not header:
            continue
        local_seqs: set[int] = set()
        if task_id in local_ids:
            local_seqs = {c.seq for c in store.list_checkpoints(session.db, task_id)}
        checkpoints = tuple(
            RemoteCheckpoint(
                seq=int(c["seq"]),
                created_at=str(c["created_at"]),
                reason=str(c.get("reason", "")),
                local=int(c["seq"]) in local_seqs,
            )
            for c in header.get("checkpoints", [])
        )
        recipients = list(header.get("recipients", []))
        listing.append(
            RemoteTask(
                task_id=task_id,
                status=str(header.get("status", "")),
                created_at=str(header.get("created_at", "")),
                updated_at=str(header.get("updated_at", "")),
                checkpoints=checkpoints,
                readable=me is not None and me.recipient in recipients,
                local=task_id in local_ids,
                recipients=len(recipients),
            )
        )
    _remember_listing(session, snapshot.strip_url_credentials(url), listing)
    return snapshot.strip_url_credentials(url), listing


def _remember_listing(session: Session, url: str, listing: list[RemoteTask]) -> None:
    now = clock.now_iso()
    rows = [
        {
            "task_id": task.task_id,
            "status": task.status,
            "created_at": task.created_at,
            "updated_at": task.updated_at,
            "checkpoints": len(task.checkpoints),
            "latest_seq": task.latest.seq if task.latest else None,
            "latest_at": task.latest.created_at if task.latest else None,
            "readable": int(task.readable),
            "header": json.dumps({"recipients": task.recipients}),
            "seen_at": now,
        }
        for task in listing
    ]
    with write_txn(session.db):
        store.replace_listing(session.db, url, rows)


# --- fetch ------------------------------------------------------------------------------------


def fetch(
    session: Session,
    task_ids: Sequence[str] = (),
    remote: str | None = None,
    repo: str | os.PathLike[str] | None = None,
    *,
    missing_ok: bool = False,
) -> FetchResult:
    """Bring remote tasks into this store: checkpoints, evidence and ledger (idempotent).

    One connection: the tasks' refs are fetched by pattern, so the same call says which of
    them the remote holds. With `missing_ok`, a task the remote lacks is skipped (sync).
    """
    if repo is None:
        local = [t for t in task_ids if t in store.task_ids(session.db)]
        repo = store.get_task(session.db, local[0]).repo_root if local else "."
    source, store_repo = _store_repo(session, repo)
    url = resolve_url(session, remote, source.toplevel)
    shown_url = snapshot.strip_url_credentials(url)
    root = _tracking_root(url)
    me = identity.load_identity_or_none()
    local_ids = store.task_ids(session.db)
    ours = bool(task_ids) and all(t in local_ids for t in task_ids)
    # Tasks this store holds already are readable here: both refs in one connection. Others
    # first by their ledger alone, and their checkpoints only when the header names us as a
    # recipient, so a task we hold no key for leaves nothing of itself here (not even its
    # plain snapshot objects).
    tracked = _fetch_tasks(store_repo, url, task_ids, KINDS if ours else ("ledger",))
    available = sorted(
        ref.removeprefix(f"{root}ledger/") for ref in tracked if ref.startswith(f"{root}ledger/")
    )
    wanted = list(task_ids) or available
    missing = [t for t in wanted if t not in available]
    if missing and not missing_ok:
        raise NotFoundError(
            f"{shown_url} holds no task {missing[0]!r}; `pitstop remote list` shows what it holds"
        )
    if not ours:
        present = {t: tracked[f"{root}ledger/{t}"] for t in wanted if t not in missing}
        readable = {t for t in present if t in local_ids} | _recipient_of(store_repo, present, me)
        if readable:
            tracked = _fetch_tasks(store_repo, url, sorted(readable), ("checkpoints",))
    result = FetchResult(url=shown_url)
    with plumbing.session(store_repo):  # one cat-file for every read of the fetch
        for task_id in (t for t in wanted if t not in missing):
            tips = _Tips(
                ledger=tracked[f"{root}ledger/{task_id}"],
                checkpoints=tracked.get(f"{root}checkpoints/{task_id}"),
                local_ledger=tracked.get(_local_ledger_ref(task_id)),
            )
            refs: dict[str, str] = {}
            try:
                with batch_txn(session.db):  # a task comes in whole or not at all, one commit
                    outcome = _import_task(
                        session, source, store_repo, url, task_id, me, tips, refs
                    )
                plumbing.set_refs(store_repo, refs)
            except (PitstopError, GitError) as exc:
                if len(wanted) == 1:
                    raise
                result.problems[task_id] = str(exc)
                continue
            if outcome is None:
                result.no_key.append(task_id)
            else:
                result.fetched[task_id] = outcome
    return result


@dataclass(frozen=True)
class _Tips:
    """Where a task's refs point after a fetch: the remote's two, and our own ledger."""

    ledger: str
    checkpoints: str | None
    local_ledger: str | None


def _import_task(
    session: Session,
    source: snapshot.SourceRepo,
    store_repo: Path,
    url: str,
    task_id: str,
    me: identity.Identity | None,
    tips: _Tips,
    refs: dict[str, str],
) -> dict[str, Any] | None:
    """Import one task; the local refs to move once the import commits are added to `refs`."""
    files = _read_tree_files(store_repo, tips.ledger)
    header = _parse_header(files.get(TASK_FILE))
    if not header or KEY_FILE not in files:
        raise RemoteFormatError(f"the remote ledger of {task_id} has no task header or key")
    data_key = identity.unwrap(files[KEY_FILE], me) if me is not None else None
    if data_key is None:
        return None
    origin = str(header["origin_store"])
    adopted = _adopt(session, source, task_id, header, origin, data_key)
    imported = 0
    if tips.checkpoints is not None:
        imported, newest = _import_checkpoints(session, store_repo, task_id, tips.checkpoints)
        if newest is not None:
            refs[f"{PREFIX}checkpoints/{task_id}"] = newest
    applied = ledger_facts.apply_facts(session, task_id, _facts_of(files))
    local = tips.local_ledger
    if local != tips.ledger and (
        local is None
        or local
        in plumbing.commit_parents(
            plumbing.read_objects(store_repo, [tips.ledger])[tips.ledger] or b""
        )
        or plumbing.is_ancestor(store_repo, local, tips.ledger)
    ):
        refs[_local_ledger_ref(task_id)] = tips.ledger
    now = clock.now_iso()
    with write_txn(session.db):
        store.link_remote(session.db, task_id, snapshot.strip_url_credentials(url), fetched_at=now)
        _refresh_task(session, task_id, header)
        session.record_event(None, "remote", task_id, "fetch", None, None, None, now)
    return {"adopted": adopted, "checkpoints": imported, "ledger": _describe(applied)}


def _describe(applied: Any) -> Any:
    if hasattr(applied, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(applied)
    return applied


def _adopt(
    session: Session,
    source: snapshot.SourceRepo,
    task_id: str,
    header: Mapping[str, Any],
    origin: str,
    data_key: bytes,
) -> bool:
    """Create the local record of a fetched task (once); False when it was here already."""
    if task_id in store.task_ids(session.db):
        scope = session.keys.scope(task_id)
        if scope != origin:
            raise ConflictError(
                f"this store has a different task with id {task_id!r}; it cannot take the "
                "remote one (fetch into another store with --store)"
            )
        return False
    session.keys.adopt(task_id, data_key, origin)
    content = _open_json(
        session, task_id, "remote/task", str(header["sealed"]), f"task {task_id}'s header"
    )
    budget = header.get("budget") or {}
    adopt_task(
        session,
        Task(
            id=task_id,
            repo_root=str(source.toplevel),
            store_repo=source.store_repo_name,
            objective=str(content["objective"]),
            status=TaskStatus(str(header["status"])),
            created_at=str(header["created_at"]),
            updated_at=str(header["updated_at"]),
            harness=_named(header.get("harness"), header.get("harness_version")),
            model=_named(header.get("model"), header.get("model_version")),
            budget=Budget(
                tokens=budget.get("tokens"), usd=budget.get("usd"), minutes=budget.get("minutes")
            ),
            tokens_used=int(header.get("tokens_used") or 0),
            usd_used=float(header.get("usd_used") or 0.0),
            credentials=tuple(content.get("credentials", [])),
            approvers=tuple(content.get("approvers", [])),
        ),
        origin_store=origin,
        data_key=data_key,
    )
    return True


def _named(name: Any, version: Any) -> NamedVersion | None:
    return NamedVersion(str(name), str(version) if version else None) if name else None


def _refresh_task(session: Session, task_id: str, header: Mapping[str, Any]) -> None:
    """Take the remote's status and consumption when it is newer than ours."""
    task = store.get_task(session.db, task_id)
    if str(header.get("updated_at", "")) > task.updated_at:
        store.update_task(
            session.db,
            task_id,
            status=TaskStatus(str(header["status"])),
            tokens_used=int(header.get("tokens_used") or 0),
            usd_used=float(header.get("usd_used") or 0.0),
            updated_at=str(header["updated_at"]),
        )


def _import_checkpoints(
    session: Session, store_repo: Path, task_id: str, tip: str
) -> tuple[int, str | None]:
    """Record every fetched checkpoint this store lacks, oldest first; return how many, and
    the local commit the task's checkpoint ref must move to (None when nothing new)."""
    have = {c.seq: c for c in store.list_checkpoints(session.db, task_id)}
    exports = store.export_commits(session.db, task_id)
    count = 0
    newest: str | None = None
    for oid, facts in reversed(_chain(store_repo, tip, set(exports.values()))):
        seq = int(facts["seq"])
        if seq in have:
            if exports.get(seq) not in (None, oid):
                raise ConflictError(
                    f"checkpoint {task_id}@{seq} here differs from the remote's; the task "
                    "diverged, resume one of them as a new task"
                )
            if exports.get(seq) is None:
                with write_txn(session.db):
                    store.record_export(session.db, task_id, seq, oid)
            continue
        newest = _import_checkpoint(session, store_repo, task_id, oid, facts)
        count += 1
    return count, newest if count else None


def _chain(
    store_repo: Path, tip: str, known: Set[str] = frozenset()
) -> list[tuple[str, dict[str, Any]]]:
    """The checkpoint commits from `tip` back along first parents, newest first, with their
    `checkpoint.json`. The walk stops at a commit in `known` (this store has it and all
    before it) or at the first commit that is not a checkpoint (the first checkpoint's first
    parent is its base commit). Reads go through the session's `cat-file`."""
    chain: list[tuple[str, dict[str, Any]]] = []
    oid: str | None = tip
    while oid is not None and oid not in known:
        raw = plumbing.read_objects(store_repo, [f"{oid}:{CHECKPOINT_FILE}", oid])
        data = raw.get(f"{oid}:{CHECKPOINT_FILE}")
        if data is None:
            break
        facts = json.loads(data)
        schema = facts.get("schema") if isinstance(facts, dict) else None
        if schema != CHECKPOINT_SCHEMA:
            raise RemoteFormatError(
                f"remote checkpoint commit {oid[:12]} uses schema {schema!r}, not "
                f"{CHECKPOINT_SCHEMA!r}; upgrade pitstop"
            )
        chain.append((oid, facts))
        parents = plumbing.commit_parents(raw.get(oid) or b"")
        oid = parents[0] if parents else None
    return chain


def _import_checkpoint(
    session: Session, store_repo: Path, task_id: str, oid: str, facts: Mapping[str, Any]
) -> str:
    """Record one fetched checkpoint; return its local commit (the fetched one itself, or for
    a sealed worktree, a local commit built once its pack is opened)."""
    seq = int(facts["seq"])
    top = plumbing.top_entries(store_repo, oid)
    base_commit = facts.get("base_commit")
    blobs = plumbing.read_objects(
        store_repo,
        [f"{oid}:{snapshot.MANIFEST_FILE}", f"{oid}:{NOTE_FILE}", f"{oid}:{PACK_FILE}"],
    )
    manifest_blob = blobs.get(f"{oid}:{snapshot.MANIFEST_FILE}")
    if manifest_blob is None or hashlib.sha256(manifest_blob).hexdigest() != facts.get(
        "manifest_sha256"
    ):
        raise RemoteFormatError(
            f"remote checkpoint {task_id}@{seq} fails its manifest hash; the remote is damaged"
        )
    sealed = _open_json(
        session, task_id, f"remote/checkpoint/{seq}", str(facts["sealed"]), f"{task_id}@{seq}"
    )
    evidence = _read_evidence(session, store_repo, task_id, oid, facts)
    local_commit = oid
    worktree_tree, index_tree = top.get("worktree"), top.get("index")
    if facts.get("worktree") == "sealed":
        local_commit, worktree_tree, index_tree = _open_sealed_worktree(
            session, store_repo, task_id, oid, facts, sealed, blobs
        )
    with write_txn(session.db):
        store.insert_fetched_checkpoint(
            session.db,
            task_id=task_id,
            seq=seq,
            state=CheckpointState.COMPLETE.value,
            reason=str(facts["reason"]),
            note=blobs.get(f"{oid}:{NOTE_FILE}"),
            commit_sha=local_commit,
            worktree_tree=worktree_tree,
            index_tree=index_tree,
            base_commit=base_commit,
            branch=sealed.get("branch"),
            manifest=manifest_blob,
            manifest_sha256=facts["manifest_sha256"],
            created_at=facts["created_at"],
            completed_at=facts.get("completed_at"),
            creation_ms=facts.get("creation_ms"),
            bytes_added=facts.get("bytes_added"),
            changed_count=int(facts.get("changed_count") or 0),
            left_out_count=int(facts.get("left_out_count") or 0),
        )
        for item in evidence:
            _insert_evidence(session, task_id, seq, item)
        store.record_export(session.db, task_id, seq, oid)
        session.record_event(
            task_id,
            "checkpoint",
            f"{task_id}@{seq}",
            "fetch",
            None,
            "complete",
            None,
            clock.now_iso(),
        )
    return local_commit


def _open_sealed_worktree(
    session: Session,
    store_repo: Path,
    task_id: str,
    oid: str,
    facts: Mapping[str, Any],
    sealed: Mapping[str, Any],
    blobs: Mapping[str, bytes | None],
) -> tuple[str, str, str]:
    """Unpack a sealed snapshot and build the local checkpoint commit that holds its trees."""
    seq = int(facts["seq"])
    envelope = blobs.get(f"{oid}:{PACK_FILE}")
    worktree_tree, index_tree = sealed.get("worktree_tree"), sealed.get("index_tree")
    if envelope is None or not worktree_tree or not index_tree:
        raise RemoteFormatError(f"remote checkpoint {task_id}@{seq} lacks its sealed snapshot")
    pack = session.keys.open(
        task_id, f"remote/checkpoint/{seq}/pack", envelope, f"the snapshot of {task_id}@{seq}"
    )
    plumbing.index_pack(store_repo, pack)
    previous = store.latest_complete(session.db, task_id)
    header = plumbing.read_objects(store_repo, [f"{oid}:pitstop.json"])[f"{oid}:pitstop.json"]
    commit, _bytes = snapshot.write_checkpoint_commit(
        store_repo,
        header=header or b"{}",
        manifest=blobs[f"{oid}:{snapshot.MANIFEST_FILE}"] or b"",
        snapshot=snapshot.Snapshot(
            worktree_tree=str(worktree_tree),
            index_tree=str(index_tree),
            base_commit=facts.get("base_commit"),
            branch=sealed.get("branch"),
            left_out=(),
            submodules=(),
            bytes_added=0,
        ),
        parent=previous.commit if previous else None,
        message=f"pitstop checkpoint {task_id}@{seq} (fetched)",
        timestamp=clock.git_timestamp(str(facts["created_at"])),
    )
    return commit, str(worktree_tree), str(index_tree)


def _read_evidence(
    session: Session, store_repo: Path, task_id: str, oid: str, facts: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The evidence of a fetched checkpoint, opened enough to be re-bound to local rows."""
    ids = [int(i) for i in facts.get("evidence", [])]
    if not ids:
        return []
    entries = plumbing.list_tree(store_repo, oid, "evidence/")
    wanted = {path: blob for path, (kind, blob) in entries.items() if kind == "blob"}
    data = plumbing.read_objects(store_repo, list(wanted.values()))
    items = []
    for origin_id in ids:
        base = f"evidence/{origin_id}/"
        raw = data.get(wanted.get(f"{base}item.json", ""))
        if raw is None:
            raise RemoteFormatError(f"evidence {origin_id} of {task_id} is missing on the remote")
        item = json.loads(raw)
        text = _open_json(
            session, task_id, f"remote/evidence/{origin_id}", item["sealed"], "remote evidence"
        )
        blobs = {}
        for path, blob in wanted.items():
            if path.startswith(base) and path.endswith(".enc") and "/chunks/" not in path:
                blobs[path[len(base) : -len(".enc")]] = data[blob]
        chunks = []
        for chunk in item["chunks"]:
            blob_data = data.get(wanted.get(f"{base}chunks/{int(chunk['seq']):06d}.enc", ""))
            if blob_data is None:
                raise RemoteFormatError(f"a chunk of evidence {origin_id} is missing")
            chunks.append({**chunk, "blob": blob_data})
        items.append(
            {
                "origin_id": origin_id,
                "plain": item["plain"],
                "text": text,
                "blobs": blobs,
                "chunks": chunks,
            }
        )
    return items


def _insert_evidence(session: Session, task_id: str, seq: int, item: Mapping[str, Any]) -> None:
    """Store one fetched evidence item under a new local id, re-binding its sealed blobs."""
    origin_id = int(item["origin_id"])
    columns = {**item["plain"], **item["text"], "task_id": task_id, "checkpoint_seq": seq}
    new_id = store.insert_evidence(session.db, **columns)

    def rebind(name: str, envelope: bytes) -> bytes:
        plain = session.keys.open(
            task_id, f"evidence/{origin_id}/{name}", envelope, f"fetched evidence {origin_id}"
        )
        return session.keys.seal(task_id, f"evidence/{new_id}/{name}", plain)

    blob_columns = {name: rebind(name, envelope) for name, envelope in item["blobs"].items()}
    if blob_columns:
        store.update_evidence(session.db, new_id, **blob_columns)
    for chunk in item["chunks"]:
        columns = {name: chunk[name] for name in _CHUNK_PLAIN}
        columns["blob"] = rebind(f"chunk/{int(chunk['seq'])}", chunk["blob"])
        store.insert_chunk(session.db, new_id, **columns)


# --- sync -------------------------------------------------------------------------------------


def sync(
    session: Session,
    task_ids: Sequence[str] = (),
    remote: str | None = None,
    repo: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Fetch, merge and push: afterwards both sides hold the union of what either knew.

    Without `remote`, each task syncs with every remote it was pushed to or fetched from
    (its repository's origin when it never travelled).
    """
    links = store.remote_links(session.db)
    targets = list(task_ids) or sorted({row["task_id"] for row in links})
    if not targets:
        raise UsageError(
            "no task has been pushed or fetched yet; `pitstop push TASK` or `pitstop fetch` first"
        )
    local = store.task_ids(session.db)
    groups: dict[tuple[str, str], list[str]] = {}
    for task_id in targets:
        where = (
            store.get_task(session.db, task_id).repo_root if task_id in local else str(repo or ".")
        )
        if remote is not None:
            urls = [resolve_url(session, remote, where)]
        else:
            urls = [row["url"] for row in links if row["task_id"] == task_id]
            urls = urls or [resolve_url(session, None, where)]
        for url in urls:
            groups.setdefault((where, url), []).append(task_id)
    report: dict[str, Any] = {"fetched": {}, "pushed": {}, "no_key": [], "problems": {}}
    for (where, url), ids in groups.items():
        fetched = fetch(session, ids, url, where, missing_ok=True)
        report["fetched"].update(fetched.fetched)
        report["no_key"] += [t for t in fetched.no_key if t not in report["no_key"]]
        report["problems"].update(fetched.problems)
        pushable = [t for t in ids if t in store.task_ids(session.db) and t not in report["no_key"]]
        if pushable:
            pushed = push(session, pushable, url)
            report["pushed"].update(pushed.tasks)
            report["url"] = pushed.url
    return report


def remote_tasks_for_dashboard(session: Session) -> list[dict[str, Any]]:
    """Remote tasks from the last listings that are not in this store yet."""
    local = store.task_ids(session.db)
    seen: dict[str, dict[str, Any]] = {}
    for row in store.remote_listing(session.db):
        if row["task_id"] not in local and row["task_id"] not in seen:
            seen[row["task_id"]] = row
    return list(seen.values())
