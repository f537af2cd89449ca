"""`pitstop push`: send tasks' checkpoints and ledgers to a remote in one atomic push.

The push leases on what we last saw of the remote (its tracking refs): when someone else moved
a ref since, the remote refuses the whole push, and we fetch, merge and push again. A checkpoint
whose snapshot holds a detected secret travels sealed whatever `--encrypt-worktree` says, and
the result names it (`sealed_for_secrets`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from core import clock, snapshot, store
from core.errors import ConflictError, UsageError
from core.git import plumbing, transport
from core.models import Task
from core.sharing.checkpoint_export import export_chain
from core.sharing.layout import PREFIX, checkpoint_ref, ledger_ref, local_ledger_ref
from core.sharing.ledger_commit import ledger_commit
from core.sharing.remotes import PendingUrl, resolving_url
from core.sharing.tracking import fetch_task_refs, tracking_ref
from core.sharing.worktree_secrets import SecretCheck
from core.store.db import batch_txn, write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.session import Session


@dataclass
class PushResult:
    """What one push sent."""

    url: str
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    # task → seqs of the checkpoints sent sealed because their snapshot holds a secret
    sealed_for_secrets: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class _Plan:
    """The ref updates of one push: `updates` on the remote (new, leased on old), `moved` here."""

    updates: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    moved: dict[str, str] = field(default_factory=dict)


def push(
    session: Session,
    task_ids: Sequence[str],
    remote: str | None = None,
    *,
    seal_worktree: bool = False,
) -> PushResult:
    """Send tasks' checkpoints and ledgers to a remote in one atomic push."""
    # opened: the task header seals the objective, harness and model for the remote
    tasks = [store.get_task(session.db, task_id, session.keys) for task_id in task_ids]
    if not tasks:
        raise UsageError("no task to push; name one (`pitstop task list` shows them)")
    by_repo: dict[str, list[Task]] = {}
    for task in tasks:
        by_repo.setdefault(task.store_repo, []).append(task)
    with ExitStack() as lookups:  # git looks up the remotes' URLs while the commits are built
        pending = {
            root: lookups.enter_context(resolving_url(session, remote, root))
            for root in dict.fromkeys(task.repo_root for task in tasks)
        }
        results = [
            result
            for repo, group in by_repo.items()
            for result in _push_repo(
                session, pending, session.paths.repos / repo, group, seal_worktree
            )
        ]
    merged = PushResult(url=results[0].url)
    for result in results:
        merged.tasks.update(result.tasks)
        merged.sealed_for_secrets.update(result.sealed_for_secrets)
    return merged


def _push_repo(
    session: Session,
    pending: Mapping[str, PendingUrl],
    store_repo: Path,
    tasks: list[Task],
    seal_worktree: bool,
) -> list[PushResult]:
    """Push the tasks of one store repository, one connection per remote URL.

    Their remote commits are built first, while git still looks up the URL; what is recorded
    before the push (remote commits built, ledger facts) commits once, and a remote that
    cannot be found undoes it all.
    """
    with plumbing.session(store_repo):  # one cat-file for every read of the push
        # objects land as one pack before the transaction that names them commits
        with batch_txn(session.db), plumbing.batched(store_repo):
            secrets = SecretCheck()
            chains = {
                t.id: export_chain(session, store_repo, t, seal_worktree, secrets) for t in tasks
            }
            groups: dict[str, list[Task]] = {}
            for task in tasks:
                url = pending[task.repo_root].url(Path(task.repo_root))
                groups.setdefault(url, []).append(task)
            plans = {
                url: _plan(session, url, store_repo, group, chains) for url, group in groups.items()
            }
        sent = [
            _send(session, url, store_repo, group, chains, plans[url])
            for url, group in groups.items()
        ]
    for result in sent:
        result.sealed_for_secrets.update(
            {t: seqs for t, seqs in secrets.sealed.items() if t in result.tasks}
        )
    return sent


def _send(
    session: Session,
    url: str,
    store_repo: Path,
    tasks: list[Task],
    chains: Mapping[str, list[str]],
    planned: tuple[_Plan, PushResult],
) -> PushResult:
    """Push on what we last saw of the remote (one connection); on a remote that moved since,
    fetch its refs, plan again and push again."""
    plan, result = planned
    for attempt in range(3):
        try:
            transport.push(store_repo, url, plan.updates, known_objects=_first_pushes(plan, tasks))
            break
        except transport.RemoteMovedError:
            if attempt == 2:
                raise
        fetch_task_refs(store_repo, url, [t.id for t in tasks])
        with batch_txn(session.db), plumbing.batched(store_repo):
            plan, result = _plan(session, url, store_repo, tasks, chains)
    plumbing.set_refs(store_repo, plan.moved)
    now = clock.now_iso()
    with write_txn(session.db, durable=False):  # that it pushed: the next push says it again
        for task in tasks:
            store.link_remote(session.db, task.id, result.url, pushed_at=now)
            # Kept out of the task's own log (task_id None): a push is not part of the ledger it
            # sends, or every push would change the ledger and the next push would send again.
            session.record_event(None, "remote", task.id, "push", None, None, None, now)
    return result


def _first_pushes(plan: _Plan, tasks: list[Task]) -> list[Path]:
    """The object directories of the tasks' repositories when a task's checkpoints go to this
    remote for the first time (issue 21): its first remote commit carries the base commit's
    tree, which the store holds without history, so git learns from the user's repository what
    the remote's branches already hold (`transport.push`). Later pushes lean on the previous
    checkpoint the remote has, and skip the look."""
    first = any(
        ref.startswith(f"{PREFIX}checkpoints/") and old is None
        for ref, (_new, old) in plan.updates.items()
    )
    if not first:
        return []
    found = (_objects_dir(Path(task.repo_root)) for task in tasks)
    return list(dict.fromkeys(path for path in found if path is not None))


def _objects_dir(repo_root: Path) -> Path | None:
    """The object directory of the repository at `repo_root`, read from its files (a worktree's
    `.git` file and `commondir` included); None when it cannot be found that way."""
    dot_git = repo_root / ".git"
    try:
        if dot_git.is_file():
            text = dot_git.read_text(encoding="utf-8").strip()
            if not text.startswith("gitdir: "):
                return None
            git_dir = (repo_root / text.removeprefix("gitdir: ")).resolve()
            common = git_dir / "commondir"
            if common.is_file():
                git_dir = (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
        else:
            git_dir = dot_git
        objects = git_dir / "objects"
        return objects if objects.is_dir() and repo_root.is_absolute() else None
    except (OSError, UnicodeDecodeError):
        return None


def _plan(
    session: Session,
    url: str,
    store_repo: Path,
    tasks: list[Task],
    chains: Mapping[str, list[str]],
) -> tuple[_Plan, PushResult]:
    """The ref updates that send `tasks` to `url`, from what we last saw of it (inside the
    caller's transaction)."""
    refs = plumbing.refs_under(store_repo, PREFIX)
    plan = _Plan()
    result = PushResult(url=snapshot.strip_url_credentials(url))
    for task in tasks:
        result.tasks[task.id] = _plan_task(
            session, url, store_repo, task, refs, chains[task.id], plan, result.url
        )
    return plan, result


def _plan_task(
    session: Session,
    url: str,
    store_repo: Path,
    task: Task,
    refs: dict[str, str],
    chain: list[str],
    plan: _Plan,
    shown_url: str,
) -> dict[str, Any]:
    """Build one task's ledger commit and add its ref updates to `plan` (its checkpoints'
    remote commits are `chain`); return what it sends."""
    remote_cp = refs.get(tracking_ref(url, "checkpoints", task.id))
    remote_ledger = refs.get(tracking_ref(url, "ledger", task.id))
    tip = chain[-1] if chain else None
    sent = 0
    if tip is not None and tip != remote_cp:
        if remote_cp is None:
            sent = len(chain)
        elif remote_cp in chain:
            sent = len(chain) - chain.index(remote_cp) - 1
        else:
            tip = _reconcile_checkpoints(store_repo, task.id, tip, remote_cp, shown_url)
        if tip is not None:
            plan.updates[checkpoint_ref(task.id)] = (tip, remote_cp)
            plan.moved[tracking_ref(url, "checkpoints", task.id)] = tip
    local_ledger = refs.get(local_ledger_ref(task.id))
    ledger = ledger_commit(session, store_repo, task, remote_ledger, local_ledger)
    if ledger is not None:
        plan.updates[ledger_ref(task.id)] = (ledger, remote_ledger)
    final = ledger or remote_ledger
    if final is not None:
        plan.moved[local_ledger_ref(task.id)] = final
        plan.moved[tracking_ref(url, "ledger", task.id)] = final
    return {"checkpoints_sent": sent, "ledger_updated": ledger is not None}


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
