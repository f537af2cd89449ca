"""`pitstop fetch`: bring remote tasks into this store — checkpoints, evidence and ledger.

Idempotent, and a task comes in whole or not at all (one transaction per task). A task whose
header does not name this operator as a recipient leaves nothing of itself here, not even its
plain snapshot objects: its checkpoints are fetched only once its ledger says we can read them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path

from core import clock, snapshot, store
from core.errors import GitError, NotFoundError, PitstopError
from core.git import plumbing
from core.ledger.facts import apply_facts, screen_facts
from core.security import identity, signing
from core.sharing.adoption import adopt_fetched, refresh_task
from core.sharing.checkpoint_import import Imported, import_checkpoints
from core.sharing.key_file import open_key_file
from core.sharing.layout import (
    KEY_FILE,
    KINDS,
    PREFIX,
    TASK_FILE,
    RemoteFormatError,
    local_ledger_ref,
)
from core.sharing.ledger_commit import facts_of
from core.sharing.remote_documents import parse_task_header, plain_free_text
from core.sharing.remote_reads import COMMIT_CAP, read_capped, read_ledger_files
from core.sharing.remotes import open_store_repo, resolving_url
from core.sharing.roster_reading import roster_in
from core.sharing.signed_header import header_problem
from core.sharing.tracking import fetch_task_refs, task_refs, tracking_root
from core.store.db import batch_txn, write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.session import Session


@dataclass
class FetchResult:
    """What one fetch brought in, task by task."""

    url: str
    fetched: dict[str, dict[str, Any]] = field(default_factory=dict)
    no_key: list[str] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Tips:
    """Where a task's refs point after a fetch: the remote's two, and our own ledger."""

    ledger: str
    checkpoints: str | None
    local_ledger: str | None


def fetch(
    session: Session,
    task_ids: Sequence[str] = (),
    remote: str | None = None,
    repo: str | os.PathLike[str] | None = None,
    *,
    missing_ok: bool = False,
    expect_owner: str | None = None,
) -> FetchResult:
    """Bring remote tasks into this store: checkpoints, evidence and ledger (idempotent).

    One connection: the tasks' refs are fetched by pattern, so the same call says which of
    them the remote holds. With `missing_ok`, a task the remote lacks is skipped (sync). With
    `expect_owner` (a fingerprint), a task met for the first time is taken only when that key
    founded its roster.
    """
    expected = signing.normal_fingerprint(expect_owner) if expect_owner else None
    known = _known_store_repo(session, task_ids, repo)
    if known is None and repo is None:
        held = store.known_task_ids(session.db, task_ids)
        local = [t for t in task_ids if t in held]
        repo = store.get_task(session.db, local[0]).repo_root if local else "."
    source: snapshot.SourceRepo | None = None
    with resolving_url(session, remote, known[0] if known else repo or ".") as pending:
        if known is not None:  # tasks of this store: their repository is on record
            repo_root, store_repo = known
        else:
            source, store_repo = open_store_repo(session, repo or ".")
            repo_root = source.toplevel
        me = identity.load_identity_or_none()  # while git answers for a git remote's URL
        url = pending.url(repo_root)

    def source_of() -> snapshot.SourceRepo:  # only a task met for the first time needs it
        return source if source is not None else snapshot.resolve_source_repo(repo_root)

    wanted, present, tracked = _fetch_refs(session, store_repo, url, task_ids, me, missing_ok)
    root = tracking_root(url)
    result = FetchResult(url=snapshot.strip_url_credentials(url))
    if not task_ids:  # refs the remote holds under names that are not task ids
        result.problems.update(task_refs(tracked, f"{root}ledger/")[1])
    with plumbing.session(store_repo):  # one cat-file for every read of the fetch
        for task_id in present:
            tips = _Tips(
                ledger=tracked[f"{root}ledger/{task_id}"],
                checkpoints=tracked.get(f"{root}checkpoints/{task_id}"),
                local_ledger=tracked.get(local_ledger_ref(task_id)),
            )
            refs: dict[str, str] = {}
            try:
                # A task comes in whole or not at all, in one commit. What it records is the
                # remote's, taken again by the next fetch, so that commit is not flushed
                # (`write_txn`) — unless it pins the task's owner, met here for the first time.
                pinned = store.trusted_genesis(session.db, task_id) is not None
                with batch_txn(session.db, durable=not pinned):
                    outcome = _import_task(
                        session, source_of, store_repo, url, task_id, me, tips, refs, expected
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


def _known_store_repo(
    session: Session, task_ids: Sequence[str], repo: str | os.PathLike[str] | None
) -> tuple[Path, Path] | None:
    """(repository, store repository) of tasks this store holds, read from their records
    rather than from a `git rev-parse` in the user's repository: only when every task asked
    for is here, all in one store repository that exists, and `repo` (if given) is the very
    directory on record. A moved or deleted repository, or any doubt, gives None (ask git).
    """
    if not task_ids:
        return None
    if len(store.known_task_ids(session.db, task_ids)) != len(set(task_ids)):
        return None
    tasks = [store.get_task(session.db, task_id) for task_id in task_ids]
    rows = {(task.repo_root, task.store_repo) for task in tasks}
    if len(rows) != 1:
        return None
    ((repo_root, name),) = rows
    root = Path(repo_root)
    if not name or not root.is_absolute() or not (root / ".git").exists():
        return None
    if repo is not None and Path(repo).expanduser().absolute() != root:
        return None
    store_repo = session.paths.repos / name
    if not (store_repo / "pitstop-source").exists():
        return None
    return root, store_repo


def _fetch_refs(
    session: Session,
    store_repo: Path,
    url: str,
    task_ids: Sequence[str],
    me: identity.Identity | None,
    missing_ok: bool,
) -> tuple[list[str], list[str], dict[str, str]]:
    """Fetch the refs of the tasks to import: (the tasks asked for, those the remote holds,
    the store repository's refs after the fetch).

    Tasks this store holds already are readable here: both refs in one connection. Others
    first by their ledger alone, and their checkpoints only when the header names us.
    """
    root = tracking_root(url)
    ours = bool(task_ids) and len(store.known_task_ids(session.db, task_ids)) == len(set(task_ids))
    tracked = fetch_task_refs(store_repo, url, task_ids, KINDS if ours else ("ledger",))
    available = sorted(task_refs(tracked, f"{root}ledger/")[0])
    wanted = list(task_ids) or available
    missing = [t for t in wanted if t not in available]
    if missing and not missing_ok:
        raise NotFoundError(
            f"{snapshot.strip_url_credentials(url)} holds no task {missing[0]!r}; "
            "`pitstop remote list` shows what it holds"
        )
    present = [t for t in wanted if t not in missing]
    if not ours:
        ledgers = {t: tracked[f"{root}ledger/{t}"] for t in present}
        held = store.known_task_ids(session.db, ledgers)  # one query for however many
        readable = held | _recipient_of(store_repo, ledgers, me)
        if readable:
            tracked = fetch_task_refs(store_repo, url, sorted(readable), ("checkpoints",))
    return wanted, present, tracked


def _recipient_of(
    store_repo: Path, ledgers: Mapping[str, str], me: identity.Identity | None
) -> set[str]:
    """The tasks (of task → ledger commit) whose roster, as its founder signed it, names `me`
    as a recipient (never the plain header's word for it)."""
    if me is None or not ledgers:
        return set()
    readable = set()
    for task_id, oid in ledgers.items():
        try:
            roster = roster_in(store_repo, task_id, oid)
        except PitstopError:
            continue
        if roster is not None and me.recipient in roster.recipients():
            readable.add(task_id)
    return readable


def _import_task(
    session: Session,
    source_of: Callable[[], snapshot.SourceRepo],
    store_repo: Path,
    url: str,
    task_id: str,
    me: identity.Identity | None,
    tips: _Tips,
    refs: dict[str, str],
    expected: str | None,
) -> dict[str, Any] | None:
    """Import one task; the local refs to move once the import commits are added to `refs`.

    Nothing is taken before the roster is resolved and the header is found signed by a member:
    a task met for the first time whose header fails is refused whole; a known one keeps its
    status and budgets, and the refusal is reported.
    """
    files, refused = read_ledger_files(store_repo, tips.ledger, task_id)
    header = parse_task_header(files.get(TASK_FILE), task_id)
    if not header or KEY_FILE not in files:
        raise RemoteFormatError(f"the remote ledger of {task_id} has no task header or key")
    screening = screen_facts(session, task_id, facts_of(files), expect_fingerprint=expected)
    problem = header_problem(task_id, header, screening.roster, files[KEY_FILE])
    local = bool(store.known_task_ids(session.db, [task_id]))
    if problem is not None and not local:
        raise RemoteFormatError(f"task {task_id} was refused: {problem}; nothing of it was taken")
    if me is None or me.recipient not in screening.roster.recipients():
        return None
    # a known task whose header fails keeps the keys it holds and takes nothing from this file
    keys = None if problem is not None else open_key_file(files[KEY_FILE], me, header, task_id)
    if keys is None and not local:
        return None
    origin = str(header["origin_store"])
    adopted = False
    if keys is not None:
        owner_signed = screening.roster.is_owner(header.get("by"))
        adopted = adopt_fetched(
            session, source_of, task_id, header, origin, keys, may_rotate=owner_signed
        )
    imported = Imported()
    if tips.checkpoints is not None:
        imported = import_checkpoints(
            session, store_repo, task_id, tips.checkpoints, screening.taken
        )
        if imported.newest is not None:
            refs[f"{PREFIX}checkpoints/{task_id}"] = imported.newest
    applied = apply_facts(
        session, task_id, facts_of(files), screening=screening, expect_fingerprint=expected
    )
    if problem is not None:
        applied.rejected.append(f"{task_id}: refused its task header: {problem}")
    if _ledger_moves_forward(store_repo, tips):
        refs[local_ledger_ref(task_id)] = tips.ledger
    now = clock.now_iso()
    with write_txn(session.db):
        store.link_remote(session.db, task_id, snapshot.strip_url_credentials(url), fetched_at=now)
        if problem is None:
            refresh_task(session, task_id, header)
        session.record_event(None, "remote", task_id, "fetch", None, None, None, now)
    ignored = plain_free_text(header)
    if ignored is not None:
        refused = [*refused, ignored]
    outcome = {
        "adopted": adopted,
        "checkpoints": imported.count,
        "refused_checkpoints": imported.refused,
        "ledger": _describe(applied),
        "owner": signing.fingerprint(screening.roster.genesis_key),
    }
    return {**outcome, "refused": refused} if refused else outcome


def _ledger_moves_forward(store_repo: Path, tips: _Tips) -> bool:
    """True when our ledger ref should move to the remote's: ours is none, or behind it."""
    local = tips.local_ledger
    if local == tips.ledger:
        return False
    if local is None:
        return True
    fetched = read_capped(store_repo, {tips.ledger: COMMIT_CAP}, "a remote ledger")[tips.ledger]
    fetched = fetched or b""
    return local in plumbing.commit_parents(fetched) or plumbing.is_ancestor(
        store_repo, local, tips.ledger
    )


def _describe(applied: Any) -> Any:
    if is_dataclass(applied) and not isinstance(applied, type):
        return asdict(applied)
    return applied
