"""`pitstop task share`: who may read a task's remote copies.

A task's recipients are public keys (age1… or ssh-ed25519); `key show` prints your own, which
`task start` adds by itself when you have an identity.
"""

from __future__ import annotations

import click

from tui.cli.base import Context, emit, json_option, pass_ctx


@click.command("share")
@click.argument("task_id")
@click.option(
    "--recipient",
    "recipients",
    multiple=True,
    required=True,
    metavar="KEY",
    help="Public key (age1…, ssh-ed25519 …, or a .pub file) to share with. Repeatable.",
)
@json_option
@pass_ctx
def task_share(ctx: Context, task_id: str, recipients: tuple[str, ...], as_json: bool) -> None:
    """Let more people read a task's remote copies (adding a key twice changes nothing)."""
    engine = ctx.engine()
    before = engine.task_recipients(task_id)
    after = engine.share_task(task_id, recipients)
    added = [recipient for recipient in after if recipient not in before]
    summary = (
        f"task {task_id} shared with {len(added)} more recipient(s)"
        if added
        else f"task {task_id} already had every recipient given; nothing changed"
    )
    emit(
        as_json,
        {"task": task_id, "recipients": after, "added": added},
        lambda: "\n".join([summary, *(f"  {recipient}" for recipient in after)]),
    )


def register(group: click.Group) -> None:
    """Attach `task share` to the `task` group."""
    task_group = group.commands["task"]
    assert isinstance(task_group, click.Group)
    task_group.add_command(task_share)
