"""`pitstop push`, `fetch`, `sync` and `remote …`: tasks shared through a git remote.

    pitstop push TASK                 # to the task repository's own `origin`
    pitstop remote list               # what the remote holds (plain headers only)
    pitstop fetch TASK                # bring it here; decrypted with your identity
    pitstop sync                      # fetch + merge ledgers + push, for every shared task

Content leaves the machine encrypted to the task's recipients (`pitstop task share`); a task
you hold no key for is listed as `no key` and nothing of it is imported.
"""

from __future__ import annotations

import shlex
from typing import Any

import click

from tui.cli.base import Context, emit, json_option, pass_ctx

REMOTE_HELP = "Remote name (see `pitstop remote names`), git remote of the repository, or URL."


@click.command("push")
@click.argument("task_ids", nargs=-1, required=True, metavar="TASK…")
@click.option("--remote", default=None, help=REMOTE_HELP + " Default: the repository's origin.")
@click.option(
    "--encrypt-worktree",
    is_flag=True,
    help="Send new checkpoints' source files as one encrypted pack instead of plain git trees.",
)
@json_option
@pass_ctx
def push(
    ctx: Context,
    task_ids: tuple[str, ...],
    remote: str | None,
    encrypt_worktree: bool,
    as_json: bool,
) -> None:
    """Send tasks' checkpoints and ledgers to refs/pitstop/* on a remote, atomically.

    Manifests, notes, evidence and ledger text leave encrypted to the task's recipients; the
    source files (worktree/) stay plain git objects shared with the repository unless
    --encrypt-worktree (which applies to checkpoints not pushed before), or unless the
    snapshot holds a detected secret: then they travel encrypted anyway, and push says so.
    Exit codes: 0 pushed (or nothing new); 1 the remote refused or moved; 2 bad input.
    """
    result = ctx.engine().push(task_ids, remote, seal_worktree=encrypt_worktree)

    def human() -> str:
        lines = [f"pushed to {result.url}"]
        for task_id, info in result.tasks.items():
            sent = info["checkpoints_sent"]
            ledger = "ledger updated" if info["ledger_updated"] else "ledger unchanged"
            lines.append(f"  {task_id}: {sent} new checkpoint(s), {ledger}")
        lines += sealed_for_secrets_lines(result.sealed_for_secrets)
        return "\n".join(lines)

    document = {"url": result.url, "tasks": result.tasks}
    if result.sealed_for_secrets:
        document["sealed_for_secrets"] = result.sealed_for_secrets
    emit(as_json, document, human)


def sealed_for_secrets_lines(sealed: dict[str, list[int]]) -> list[str]:
    """One line per task whose new checkpoints travelled sealed because they hold a secret."""
    return [
        f"  {', '.join(f'{task_id}@{seq}' for seq in seqs)}: the snapshot holds a detected "
        "secret, so its files travel encrypted (as with --encrypt-worktree)"
        for task_id, seqs in sealed.items()
    ]


@click.command("fetch")
@click.argument("task_ids", nargs=-1, metavar="[TASK…]")
@click.option("--remote", default=None, help=REMOTE_HELP + " Default: the repository's origin.")
@click.option(
    "--repo",
    default=None,
    type=click.Path(file_okay=False),
    help="Your clone of the task's repository (default: the current directory).",
)
@click.option(
    "--expect-owner",
    metavar="FINGERPRINT",
    help="Take a task met for the first time only if this key founded it (XXXX-XXXX-XXXX-XXXX, "
    "as its owner's `pitstop key show` prints it).",
)
@json_option
@pass_ctx
def fetch(
    ctx: Context,
    task_ids: tuple[str, ...],
    remote: str | None,
    repo: str | None,
    expect_owner: str | None,
    as_json: bool,
) -> None:
    """Bring remote tasks into this store (all the remote holds when no TASK is named).

    Only missing objects move; fetching again changes nothing. A task met for the first time
    pins its founder's key (trust on first use, or --expect-owner); facts whose signature or
    author the roster does not admit are refused, one line each. Exit codes: 0 done; 1 a task
    could not be imported; 2 bad input.
    """
    expected = _fingerprint_option(expect_owner)
    result = ctx.engine().fetch(task_ids, remote, repo, expect_owner=expected)
    document = {
        "url": result.url,
        "fetched": result.fetched,
        "no_key": result.no_key,
        "problems": result.problems,
    }

    def human() -> str:
        lines = [f"fetched from {result.url}"]
        for task_id, info in result.fetched.items():
            verb = "new task" if info["adopted"] else "updated"
            owner = f", owner {info['owner']}" if info.get("owner") else ""
            lines.append(f"  {task_id}: {verb}, {info['checkpoints']} new checkpoint(s){owner}")
            lines += [f"  {task_id}: {line}" for line in info.get("refused", [])]
            lines += [f"  {line}" for line in info.get("refused_checkpoints", [])]
        lines += refused_lines(result.fetched)
        for task_id in result.no_key:
            lines.append(
                f"  {task_id}: no key — you are not a recipient; ask its operator to run "
                f"`pitstop task share {shlex.quote(task_id)} --recipient <your key>` and push "
                "again (`pitstop key show` prints your key)"
            )
        for task_id, problem in result.problems.items():
            lines.append(f"  {task_id}: not fetched: {problem}")
        if len(lines) == 1:
            lines.append("  nothing to fetch")
        return "\n".join(lines)

    emit(as_json, document, human)
    if result.problems:
        raise SystemExit(1)


@click.command("sync")
@click.argument("task_ids", nargs=-1, metavar="[TASK…]")
@click.option("--remote", default=None, help=REMOTE_HELP + " Default: the repository's origin.")
@click.option("--repo", default=None, type=click.Path(file_okay=False), help="Your clone.")
@json_option
@pass_ctx
def sync(
    ctx: Context, task_ids: tuple[str, ...], remote: str | None, repo: str | None, as_json: bool
) -> None:
    """Fetch, merge ledgers and push: every shared task, or the ones named."""
    report = ctx.engine().sync(task_ids, remote, repo)

    def human() -> str:
        lines = []
        for task_id, info in report["fetched"].items():
            lines.append(f"  {task_id}: fetched {info['checkpoints']} new checkpoint(s)")
            lines += [f"  {line}" for line in info.get("refused_checkpoints", [])]
        lines += refused_lines(report["fetched"])
        for task_id, info in report["pushed"].items():
            ledger = "ledger updated" if info["ledger_updated"] else "ledger unchanged"
            lines.append(f"  {task_id}: pushed {info['checkpoints_sent']} checkpoint(s), {ledger}")
        lines += sealed_for_secrets_lines(report.get("sealed_for_secrets", {}))
        for task_id in report["no_key"]:
            lines.append(f"  {task_id}: no key (you are not a recipient)")
        for task_id, problem in report["problems"].items():
            lines.append(f"  {task_id}: {problem}")
        return "\n".join(["synced", *lines])

    emit(as_json, report, human)
    if report["problems"]:
        raise SystemExit(1)


def _fingerprint_option(text: str | None) -> str | None:
    """`--expect-owner` in its normal form; a malformed one is a usage error (exit 2)."""
    if text is None:
        return None
    from core.errors import UsageError
    from core.security import signing

    try:
        return signing.normal_fingerprint(text)
    except signing.SigningError as exc:
        raise UsageError(f"--expect-owner: {exc.message}") from exc


def refused_lines(fetched: dict[str, Any]) -> list[str]:
    """One line per fact newly refused in a fetch or sync, then how many and where to look."""
    lines: list[str] = []
    for task_id, info in fetched.items():
        rejected = list((info.get("ledger") or {}).get("rejected") or [])
        if not rejected:
            continue
        lines += [f"  {' '.join(str(line).split())}" for line in rejected]
        lines.append(
            f"  {task_id}: {len(rejected)} fact(s) refused and not applied; "
            f"`pitstop task refused {task_id}` lists every one"
        )
    return lines


@click.group("remote")
def remote_group() -> None:
    """Remotes that hold shared tasks: list what they hold, name them."""


@remote_group.command("list")
@click.option("--remote", default=None, help=REMOTE_HELP + " Default: the repository's origin.")
@click.option("--repo", default=".", type=click.Path(file_okay=False), help="Your clone.")
@json_option
@pass_ctx
def remote_list(ctx: Context, remote: str | None, repo: str, as_json: bool) -> None:
    """Tasks and checkpoints on a remote, from refs and plain headers alone.

    A ref or header the remote holds that cannot be read is left out with one line each.
    Exit codes: 0 listed; 1 listed, but some task on the remote could not be read; 2 bad input.
    """
    listed = ctx.engine().list_remote(remote, repo)
    url, tasks = listed.url, listed.tasks
    document: dict[str, Any] = {
        "url": url,
        "tasks": [
            {
                "task": task.task_id,
                "status": task.status,
                "updated_at": task.updated_at,
                "readable": task.readable,
                "local": task.local,
                "recipients": task.recipients,
                "owner": task.owner,
                "owner_note": task.owner_note,
                "checkpoints": [
                    {
                        "seq": c.seq,
                        "created_at": c.created_at,
                        "reason": c.reason,
                        "local": c.local,
                    }
                    for c in task.checkpoints
                ],
            }
            for task in tasks
        ],
        "problems": listed.problems,
    }

    def human() -> str:
        refused = [f"  {name}: not listed: {why}" for name, why in listed.problems.items()]
        if not tasks:
            return "\n".join([f"{url} holds no Pitstop tasks", *refused])
        lines = [f"{url}: {len(tasks)} task(s)"]
        for task in tasks:
            local_seqs = sum(1 for c in task.checkpoints if c.local)
            where = "local" if task.local else "remote only"
            key = "" if task.readable else "  no key"
            latest = f"@{task.latest.seq} {task.latest.created_at}" if task.latest else "-"
            lines.append(
                f"  {task.task_id:<32} {task.status:<9} {len(task.checkpoints):>3} checkpoint(s) "
                f"({local_seqs} here)  latest {latest}  {where}{key}"
            )
            owner = f"{task.owner}, {task.owner_note}" if task.owner else task.owner_note
            lines.append(f"  {'':<32} owner {owner}")
        return "\n".join([*lines, *refused])

    emit(as_json, document, human)
    if listed.problems:
        raise SystemExit(1)


@remote_group.command("add")
@click.argument("name")
@click.argument("url")
@click.option("--repo", default=".", type=click.Path(file_okay=False), help="Your clone.")
@json_option
@pass_ctx
def remote_add(ctx: Context, name: str, url: str, repo: str, as_json: bool) -> None:
    """Name a remote (a URL or path git can push to) for `--remote NAME`."""
    row = ctx.engine().add_remote(name, url, repo)
    emit(as_json, row, f"remote {name} → {row['url']}")


@remote_group.command("remove")
@click.argument("name")
@json_option
@pass_ctx
def remote_remove(ctx: Context, name: str, as_json: bool) -> None:
    """Forget a named remote (nothing on the remote changes)."""
    ctx.engine().remove_remote(name)
    emit(as_json, {"removed": name}, f"remote {name} removed")


@remote_group.command("names")
@json_option
@pass_ctx
def remote_names(ctx: Context, as_json: bool) -> None:
    """Named remotes, and which shared tasks went through which remote."""
    engine = ctx.engine()
    remotes = engine.remotes()
    links = engine.remote_links()

    def human() -> str:
        lines = [f"{r['name']:<16} {r['url']}  ({r['repo_root']})" for r in remotes]
        if not lines:
            lines = ["no named remotes; tasks use their repository's origin"]
        for link in links:
            pushed = link["pushed_at"] or "never"
            fetched = link["fetched_at"] or "never"
            lines.append(f"  {link['task_id']} ⇄ {link['url']}  pushed {pushed}, fetched {fetched}")
        return "\n".join(lines)

    emit(as_json, {"remotes": remotes, "links": links}, human)
