"""`pitstop task …`: start, list, show, report usage, share, finish and judge tasks.

Every subcommand of `task` lives here, so whoever looks for `pitstop task accept` finds it by the
file's name; the engine does the work and writes the audit event.
"""

from __future__ import annotations

from typing import Any

import click

from tui.cli.base import Context, emit, json_option, pass_ctx


@click.group()
def task() -> None:
    """Start, list, show and finish tasks."""


@task.command("start")
@click.option(
    "--repo", required=True, type=click.Path(), help="A path inside the task's git work tree."
)
@click.option("--objective", required=True, help="What the task should achieve.")
@click.option("--id", "task_id", help="Task id (default: generated from the objective).")
@click.option("--harness", help="Agent harness as NAME@VERSION, e.g. claude-code@2.0.14.")
@click.option("--model", help="Model as NAME@VERSION.")
@click.option("--budget-tokens", type=click.IntRange(min=0), help="Token budget.")
@click.option("--budget-usd", type=click.FloatRange(min=0), help="Money budget in USD.")
@click.option("--budget-minutes", type=click.FloatRange(min=0), help="Runtime budget in minutes.")
@click.option(
    "--credential",
    "credentials",
    multiple=True,
    help="Environment variable the task needs (fingerprinted, never stored). Repeatable.",
)
@click.option(
    "--approver",
    "approvers",
    multiple=True,
    help="Operator allowed to decide this task's approvals (default: any). Repeatable.",
)
@click.option(
    "--recipient",
    "recipients",
    multiple=True,
    metavar="KEY",
    help="Public key (age1…, ssh-ed25519 …, or a .pub file) that may read the task's remote "
    "copies; your own is added when you have an identity. Repeatable.",
)
@click.option(
    "--p-interrupt",
    type=click.FloatRange(0, 1),
    metavar="P",
    help="This task's P(interruption) per hour of work (default: [policy] in config.toml).",
)
@click.option(
    "--rate",
    type=click.FloatRange(min=0),
    metavar="USD",
    help="This task's human rate per hour, for re-orientation (default: [policy]).",
)
@json_option
@pass_ctx
def task_start(
    ctx: Context,
    repo: str,
    objective: str,
    task_id: str | None,
    harness: str | None,
    model: str | None,
    budget_tokens: int | None,
    budget_usd: float | None,
    budget_minutes: float | None,
    credentials: tuple[str, ...],
    approvers: tuple[str, ...],
    recipients: tuple[str, ...],
    p_interrupt: float | None,
    rate: float | None,
    as_json: bool,
) -> None:
    """Register a new task on a git repository."""
    from core.models import Budget, NamedVersion
    from tui.render import task_detail

    engine = ctx.engine()
    created = engine.start_task(
        repo=repo,
        objective=objective,
        task_id=task_id,
        harness=NamedVersion.parse(harness, "--harness") if harness else None,
        model=NamedVersion.parse(model, "--model") if model else None,
        budget=Budget(tokens=budget_tokens, usd=budget_usd, minutes=budget_minutes),
        credentials=credentials,
        approvers=approvers,
        recipients=recipients,
    )
    engine.set_task_policy(created.id, p_interrupt_per_hour=p_interrupt, human_usd_per_hour=rate)
    shared = engine.task_recipients(created.id)
    emit(
        as_json,
        {**_task_json(created), "recipients": shared},
        lambda: task_detail(created, shared),
    )


@task.command("list")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(["running", "paused", "waiting", "resuming", "done", "cancelled", "expired"]),
    help="Only tasks with this status. Repeatable.",
)
@json_option
@pass_ctx
def task_list(ctx: Context, statuses: tuple[str, ...], as_json: bool) -> None:
    """List tasks, most recently active first."""
    from tui.quick import task_list_text

    click.echo(task_list_text(ctx.engine(), statuses, as_json))


def _task_json(task_obj: Any) -> dict[str, Any]:
    from tui.render import jsonable

    data: dict[str, Any] = jsonable(task_obj)
    return data


@task.command("show")
@click.argument("task_id")
@json_option
@pass_ctx
def task_show(ctx: Context, task_id: str, as_json: bool) -> None:
    """Show one task, the recipients its remote copies are encrypted to, its roster (owner
    fingerprint, members, who may decide) and how many facts from elsewhere were refused."""
    from tui.render import task_detail
    from tui.trust_text import refused_hint, roster_lines

    engine = ctx.engine()
    found = engine.get_task(task_id)
    shared = engine.task_recipients(task_id)
    roster = engine.roster(task_id)
    refused = len(engine.rejected_facts(task_id))
    travels = bool(engine.remote_links(task_id))

    def human() -> str:
        lines = [task_detail(found, shared), *roster_lines(roster, task_id, travels)]
        if refused:
            lines.append(f"refused     {refused_hint(task_id, refused)}")
        return "\n".join(lines)

    emit(
        as_json,
        {**_task_json(found), "recipients": shared, "roster": roster, "refused": refused},
        human,
    )


def _finish(
    ctx: Context, task_id: str, status_name: str, reason: str | None, as_json: bool
) -> None:
    from core.models import TaskStatus

    finished = ctx.engine().finish_task(task_id, TaskStatus(status_name), reason)
    emit(as_json, finished, f"task {finished.id} is now {finished.status.value}")


@task.command("done")
@click.argument("task_id")
@click.option("--reason", help="Why (kept in the audit log).")
@json_option
@pass_ctx
def task_done(ctx: Context, task_id: str, reason: str | None, as_json: bool) -> None:
    """Mark a task done."""
    _finish(ctx, task_id, "done", reason, as_json)


@task.command("cancel")
@click.argument("task_id")
@click.option("--reason", help="Why (kept in the audit log).")
@json_option
@pass_ctx
def task_cancel(ctx: Context, task_id: str, reason: str | None, as_json: bool) -> None:
    """Cancel a task."""
    _finish(ctx, task_id, "cancelled", reason, as_json)


@task.command("usage")
@click.argument("task_id")
@click.option("--tokens-used", type=int, help="Tokens consumed so far (cumulative).")
@click.option("--usd-used", type=float, help="Money spent so far in USD (cumulative).")
@json_option
@pass_ctx
def task_usage(
    ctx: Context, task_id: str, tokens_used: int | None, usd_used: float | None, as_json: bool
) -> None:
    """Report what a task has spent so far, between checkpoints.

    The numbers are cumulative, as `checkpoint --tokens-used --usd-used` takes them; each
    report is audited, and whether the next checkpoint pays counts what was spent since the
    newest one.
    """
    from core.errors import UsageError

    if tokens_used is None and usd_used is None:
        raise UsageError("say what was spent: --tokens-used N and/or --usd-used X")
    engine = ctx.engine()
    engine.record_usage(task_id, tokens_used=tokens_used, usd_used=usd_used)
    now = engine.get_task(task_id)
    emit(
        as_json,
        now,
        f"task {now.id} has used ${now.usd_used:g} and {now.tokens_used:,} tokens so far",
    )


@task.command("share")
@click.argument("task_id")
@click.option(
    "--recipient",
    "recipients",
    multiple=True,
    required=True,
    metavar="KEY",
    help="Public key (age1…, ssh-ed25519 …, or a .pub file) to share with. Repeatable.",
)
@click.option(
    "--signer",
    metavar="KEY",
    help="That person's public signing key (ed25519:… from their `pitstop key show`): they may "
    "then write facts too. Needs exactly one --recipient.",
)
@click.option("--name", "label", metavar="LABEL", help="How the roster names them (a label only).")
@json_option
@pass_ctx
def task_share(
    ctx: Context,
    task_id: str,
    recipients: tuple[str, ...],
    signer: str | None,
    label: str | None,
    as_json: bool,
) -> None:
    """Let more people read a task's remote copies and, with --signer, write to it (adding a
    key twice changes nothing). Once the task has a roster, this is a change signed by you."""
    from tui.cli.trust import signing_key_option

    key = signing_key_option(signer, "--signer")
    engine = ctx.engine()
    before = engine.task_recipients(task_id)
    roster_before = engine.roster(task_id)
    after = engine.share_task(task_id, recipients, signer=key, label=label)
    roster = engine.roster(task_id)
    added = [recipient for recipient in after if recipient not in before]
    changed = roster is not None and (roster_before or {}).get("version") != roster["version"]
    summary = (
        f"task {task_id} shared with {len(added)} more recipient(s)"
        if added
        else f"task {task_id}: its roster was updated"
        if changed
        else f"task {task_id} already had every recipient given; nothing changed"
    )
    members = (roster or {}).get("members", [])
    writer = next((m for m in members if key and m.get("key") == key), None)
    lines = [summary]
    if writer is not None:
        lines.append(f"  {writer['label']} ({writer['fingerprint']}) may write facts to it")
    emit(
        as_json,
        {"task": task_id, "recipients": after, "added": added, "roster": roster},
        lambda: "\n".join([*lines, *(f"  {recipient}" for recipient in after)]),
    )


def _judge(ctx: Context, task_id: str, accepted: bool, reason: str, as_json: bool) -> None:
    result = ctx.engine().judge_resume(task_id, accepted, reason)
    verdict = "accepted" if accepted else "rejected"
    emit(as_json, result, f"resumed work on {task_id} {verdict}: {reason}")


@task.command("accept")
@click.argument("task_id")
@click.option("--reason", required=True, help="Why the resumed work is good.")
@json_option
@pass_ctx
def task_accept(ctx: Context, task_id: str, reason: str, as_json: bool) -> None:
    """Record that the resumed work was accepted."""
    _judge(ctx, task_id, True, reason, as_json)


@task.command("reject")
@click.argument("task_id")
@click.option("--reason", required=True, help="Why the resumed work is not good.")
@json_option
@pass_ctx
def task_reject(ctx: Context, task_id: str, reason: str, as_json: bool) -> None:
    """Record that the resumed work was rejected."""
    _judge(ctx, task_id, False, reason, as_json)


def _register_trust_commands() -> None:
    """`task unshare`, `task approver` and `task refused` live in `tui.cli.trust`."""
    from tui.cli import trust

    task.add_command(trust.task_unshare)
    task.add_command(trust.task_approver)
    task.add_command(trust.task_refused)


_register_trust_commands()
