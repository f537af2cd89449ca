"""Remote tasks on the dashboard: rows from the last listings, and the fetch and sync it runs.

The dashboard never touches the network to draw itself: remote-only tasks come from the
listing each `pitstop remote list` (or a dashboard sync) stored, and shared tasks from the
store's remote links. Only `fetch_task` and `sync_everything` go to remotes; the dashboard runs
them in thread workers that post `tui.messages` back (STYLE.md example 3).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from core.engine import Engine, TaskSummary
from core.errors import PitstopError
from core.models import Task, TaskStatus


class RemoteSummary(NamedTuple):
    """A task seen on a remote and not in this store: its plain header, as a dashboard row.

    It has every field of `core.engine.TaskSummary` (the table treats both alike), then its own.
    `task.objective` holds what the row says in place of the (sealed) objective.
    """

    task: Task
    checkpoint_count: int
    last_checkpoint_at: str | None
    pending_approvals: int = 0
    uncertain_effects: int = 0
    last_verdict: str | None = None
    url: str = ""
    remote_name: str | None = None
    readable: bool = True
    seen_at: str = ""
    latest_seq: int | None = None
    local_repo: str | None = None  # the clone a fetch writes into, when the store knows one

    @property
    def where(self) -> str:
        """The remote's name when it has one, else its URL."""
        return self.remote_name or self.url


# A row of the dashboard's task table: a local task or one only seen on a remote.
DashboardRow = TaskSummary | RemoteSummary


@dataclass(frozen=True)
class RemoteView:
    """What the dashboard shows about remotes, read from the store without the network."""

    rows: list[RemoteSummary] = field(default_factory=list)
    links: dict[str, tuple[str, ...]] = field(default_factory=dict)  # shared task -> its URLs
    remote_urls: tuple[str, ...] = ()  # named remotes, linked and listed URLs
    refused: dict[str, int] = field(default_factory=dict)  # task -> facts refused from elsewhere

    @property
    def is_empty(self) -> bool:
        """True when nothing here has anything to do with a remote."""
        return not (self.rows or self.links or self.remote_urls)


def _repos_by_url(engine: Engine, links: list[dict[str, object]]) -> dict[str, str]:
    """For each known remote URL, a local clone to fetch into: a named remote's repository,
    else the repository of a task that travels through that URL."""
    repos = {str(r["url"]): str(r["repo_root"]) for r in engine.remotes() if r.get("repo_root")}
    for link in links:
        url = str(link["url"])
        if url not in repos:
            try:
                repos[url] = engine.get_task(str(link["task_id"])).repo_root
            except PitstopError:
                continue
    return repos


def _status(value: object) -> TaskStatus:
    try:
        return TaskStatus(str(value))
    except ValueError:
        return TaskStatus.PAUSED  # a status from a newer Pitstop: shown as needing a look


def read_remote_view(engine: Engine) -> RemoteView:
    """Remote-only tasks from the last listings, and which local tasks are shared where."""
    links = engine.remote_links()
    shared: dict[str, tuple[str, ...]] = {}
    for link in links:
        task_id = str(link["task_id"])
        shared[task_id] = (*shared.get(task_id, ()), str(link["url"]))
    listed = engine.remote_only_tasks()
    remotes = engine.remotes()
    refused = engine.rejected_counts()
    if not (links or listed or remotes):
        return RemoteView(refused=refused)
    names = {str(r["url"]): str(r["name"]) for r in remotes}
    repos = _repos_by_url(engine, links)
    rows = []
    for row in listed:
        url = str(row["url"])
        readable = bool(row["readable"])
        name = names.get(url)
        where = name or url
        text = f"on {where}"  # the badge says `no key` when it is unreadable
        latest_at = row.get("latest_at")
        rows.append(
            RemoteSummary(
                task=Task(
                    id=str(row["task_id"]),
                    repo_root=repos.get(url) or url,
                    store_repo="",
                    objective=text,
                    status=_status(row["status"]),
                    created_at=str(row["created_at"]),
                    updated_at=str(row["updated_at"]),
                ),
                checkpoint_count=int(row.get("checkpoints") or 0),
                last_checkpoint_at=str(latest_at) if latest_at else None,
                url=url,
                remote_name=name,
                readable=readable,
                seen_at=str(row.get("seen_at") or ""),
                latest_seq=int(row["latest_seq"]) if row.get("latest_seq") is not None else None,
                local_repo=repos.get(url),
            )
        )
    urls = dict.fromkeys([*names, *(str(link["url"]) for link in links), *(r.url for r in rows)])
    return RemoteView(rows=rows, links=shared, remote_urls=tuple(urls), refused=refused)


def one_line(text: str) -> str:
    """`text` on one line: git's multi-line complaints become one readable sentence."""
    return " ".join(text.split())


def no_key_help(task_id: str) -> str:
    """Why a `no key` task cannot be fetched, and how to get access."""
    return (
        f"{task_id} is encrypted to its operators and you are not one of them, so it cannot be "
        "fetched. Run `pitstop key show` and send your key to its operator, who runs "
        f"`pitstop task share {shlex.quote(task_id)} --recipient <your key>` and pushes again; "
        "then sync (S)."
    )


# --- the work the dashboard's workers do -----------------------------------------------------


@dataclass(frozen=True)
class RemoteOutcome:
    """What a fetch or sync did, as the lines the dashboard shows."""

    title: str
    lines: tuple[str, ...]
    problems: tuple[str, ...] = ()
    changed: bool = False  # the store changed: the task list must be read again

    @property
    def summary(self) -> str:
        """Every line, problems last."""
        return "\n".join((*self.lines, *self.problems)) or "nothing to do"


Progress = Callable[[str], object]


def fetch_task(
    engine: Engine, task_id: str, url: str | None, repo: str | None, progress: Progress
) -> RemoteOutcome:
    """Fetch one task (remote-only: into `repo`; shared: its newest checkpoints and ledger)."""
    progress(f"fetching {task_id} from {url or 'the repository origin'}…")
    result = engine.fetch([task_id], url, repo)
    lines: list[str] = []
    for fetched_id, info in result.fetched.items():
        verb = "now in this store" if info.get("adopted") else "updated"
        count = int(info.get("checkpoints") or 0)
        lines.append(f"{fetched_id}: {verb}, {count} new checkpoint(s) from {result.url}")
    problems = [f"{t}: {one_line(problem)}" for t, problem in result.problems.items()]
    problems += [no_key_help(t) for t in result.no_key]
    return RemoteOutcome(
        title=f"Fetched {task_id}" if result.fetched else f"Could not fetch {task_id}",
        lines=tuple(lines),
        problems=tuple(problems),
        changed=bool(result.fetched),
    )


def sync_everything(engine: Engine, progress: Progress) -> RemoteOutcome:
    """Sync every shared task with the remote it travels through (fetch, merge, push), then
    list every known remote again so the dashboard shows what they hold now."""
    links = engine.remote_links()
    view = read_remote_view(engine)
    if view.is_empty:
        return RemoteOutcome(
            title="Nothing to sync",
            lines=(
                "No task is shared and no remote is known: `pitstop remote add NAME URL` names "
                "one, `pitstop push TASK` shares a task.",
            ),
        )
    by_url: dict[str, list[str]] = {}
    for link in links:
        ids = by_url.setdefault(str(link["url"]), [])
        if str(link["task_id"]) not in ids:
            ids.append(str(link["task_id"]))
    lines: list[str] = []
    problems: list[str] = []
    changed = False
    for url, task_ids in by_url.items():
        progress(f"syncing {len(task_ids)} task(s) with {url}…")
        try:
            report = engine.sync(task_ids, url)
        except PitstopError as exc:
            problems.append(f"{url}: {one_line(exc.message)}")
            continue
        pulled = sum(int(info.get("checkpoints") or 0) for info in report["fetched"].values())
        sent = sum(int(info.get("checkpoints_sent") or 0) for info in report["pushed"].values())
        ledgers = sum(1 for info in report["pushed"].values() if info.get("ledger_updated"))
        changed = changed or bool(report["fetched"])
        lines.append(
            f"{url}: {len(task_ids)} task(s) · {pulled} checkpoint(s) fetched · "
            f"{sent} pushed · {ledgers} ledger(s) updated"
        )
        problems += [f"{t}: no key (not a recipient)" for t in report["no_key"]]
        problems += [f"{t}: {one_line(str(problem))}" for t, problem in report["problems"].items()]
    repos = _repos_by_url(engine, links)
    for url in view.remote_urls:
        progress(f"listing {url}…")
        try:
            listed = engine.list_remote(url, repos.get(url, "."))
        except PitstopError as exc:
            problems.append(f"{url}: {one_line(exc.message)}")
            continue
        changed = True
        remote_only = sum(1 for task in listed.tasks if not task.local)
        lines.append(f"{url}: holds {len(listed.tasks)} task(s), {remote_only} not here")
        problems += [f"{url}: {t}: {one_line(why)}" for t, why in listed.problems.items()]
    return RemoteOutcome(
        title="Synced" if not problems else "Synced, with problems",
        lines=tuple(lines),
        problems=tuple(problems),
        changed=changed,
    )
