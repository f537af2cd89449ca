"""`pitstop task unshare|approver|refused`: the commands that change or read a task's roster.

They sit beside `tui/cli/tasks.py` (which registers them on the `task` group) because they are
about trust, not about a task's lifecycle: who may read (recipients), who may write (members by
signing key), who may decide (approvers), and what was refused because its author was none of
these. Each roster change is a fact signed by an owner; a push or sync carries it to the others.
"""

from __future__ import annotations

import click

from tui.cli.base import Context, emit, json_option, pass_ctx


def signing_key_option(text: str | None, option: str) -> str | None:
    """A public signing key given on the command line, in its normal form; a malformed one is a
    usage error (exit 2), like any other bad option value."""
    if text is None:
        return None
    from core.errors import UsageError
    from core.security import signing

    try:
        return signing.parse_public_key(text)
    except signing.SigningError as exc:
        raise UsageError(f"{option}: {exc.message}") from exc


def _approver_names(names: tuple[str, ...]) -> list[str]:
    """Labels as given; keys in their normal form (a malformed key: exit 2)."""
    return [
        str(signing_key_option(name, "approver")) if name.startswith(("ed25519:", "ssh-")) else name
        for name in names
    ]


@click.command("unshare")
@click.argument("task_id")
@click.option(
    "--recipient",
    "recipients",
    multiple=True,
    required=True,
    metavar="KEY|LABEL",
    help="A member to remove: their age1… recipient, ed25519:… signing key or roster label. "
    "Repeatable.",
)
@json_option
@pass_ctx
def task_unshare(ctx: Context, task_id: str, recipients: tuple[str, ...], as_json: bool) -> None:
    """Remove people from a task's roster and rotate its data key, so nothing written after
    opens for them (what they already fetched stays theirs)."""
    engine = ctx.engine()
    before = engine.task_recipients(task_id)
    after = engine.unshare_task(task_id, recipients)
    removed = [recipient for recipient in before if recipient not in after]
    summary = (
        f"task {task_id}: removed {', '.join(recipients)}; its data key rotated, so what is "
        f"written from now on opens only for the {len(after)} recipient(s) left "
        "(push or sync to share the change)"
    )
    emit(
        as_json,
        {"task": task_id, "recipients": after, "removed": removed, "rotated": True},
        lambda: "\n".join([summary, *(f"  {recipient}" for recipient in after)]),
    )


@click.group("approver")
def task_approver() -> None:
    """Say who may decide a task's approvals: a signed roster change, by label or key."""


def _set_approvers(
    ctx: Context, task_id: str, add: tuple[str, ...], remove: tuple[str, ...], as_json: bool
) -> None:
    from tui.trust_text import who_decides

    roster = ctx.engine().set_approvers(task_id, _approver_names(add), _approver_names(remove))
    labels = {str(m["label"]) for m in roster["members"]}
    strangers = [name for name in add if not name.startswith(("ed25519:", "ssh-")) and
                 name not in labels]  # fmt: skip
    note = (
        f"; no member is labelled {', '.join(strangers)} yet, so nobody decides as that until "
        f"an owner runs `pitstop task share {task_id} … --name {strangers[0]}`"
        if strangers
        else ""
    )
    emit(
        as_json,
        roster,
        f"task {task_id}: may decide: {who_decides(roster)} (roster version "
        f"{roster['version']}; push or sync to share it){note}",
    )


@task_approver.command("add")
@click.argument("task_id")
@click.argument("names", nargs=-1, required=True, metavar="NAME|KEY…")
@json_option
@pass_ctx
def approver_add(ctx: Context, task_id: str, names: tuple[str, ...], as_json: bool) -> None:
    """Let members decide this task's approvals: a roster label or an ed25519:… key."""
    _set_approvers(ctx, task_id, names, (), as_json)


@task_approver.command("remove")
@click.argument("task_id")
@click.argument("names", nargs=-1, required=True, metavar="NAME|KEY…")
@json_option
@pass_ctx
def approver_remove(ctx: Context, task_id: str, names: tuple[str, ...], as_json: bool) -> None:
    """Take the right to decide away (with nobody left, any member may decide)."""
    _set_approvers(ctx, task_id, (), names, as_json)


@click.command("refused")
@click.argument("task_id")
@json_option
@pass_ctx
def task_refused(ctx: Context, task_id: str, as_json: bool) -> None:
    """List the facts from elsewhere this store refused for a task, one line each, with why.

    A refused fact was never applied: its signature did not verify, or the task's roster does
    not let its author make it. It is kept here so you can see who tried what.
    """
    from tui.trust_text import member_labels, refused_line

    engine = ctx.engine()
    rows = engine.rejected_facts(task_id)
    labels = member_labels(engine.roster(task_id))
    for row in rows:
        row["label"] = labels.get(str(row.get("author")))

    def human() -> str:
        if not rows:
            return f"task {task_id}: no fact from elsewhere was refused"
        lines = [f"task {task_id}: {len(rows)} fact(s) from elsewhere refused, never applied"]
        return "\n".join([*lines, *(f"  {refused_line(row, labels)}" for row in rows)])

    emit(as_json, rows, human)
