"""`pitstop checkpoint`, `checkpoints`, `show`, `diff` and `checkout`: a task's snapshots.

Taking a checkpoint, listing them, reading one's manifest and changes, and writing its exact
working tree out again: everything a person does with one checkpoint at a time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from tui.cli.base import Context, emit, json_option, pass_ctx, say
from tui.widgets.formatting import counted


@click.command()
@click.argument("task_id")
@click.option(
    "--reason",
    type=click.Choice(["milestone", "before-wait", "manual", "interrupt", "turn"]),
    default="manual",
    show_default=True,
    help="Why the checkpoint is taken; `turn` is skipped under [policy] min_interval_seconds.",
)
@click.option("--note", help="A note for whoever resumes.")
@click.option("--done", "done", multiple=True, help="A step now completed. Repeatable.")
@click.option(
    "--todo", "todo", multiple=True, help="A remaining step (replaces the list). Repeatable."
)
@click.option("--tokens-used", type=int, help="Tokens consumed so far (cumulative).")
@click.option("--usd-used", type=float, help="Money spent so far in USD (cumulative).")
@click.option("--force", is_flag=True, help="Record a checkpoint even if nothing changed.")
@click.option(
    "--max-file-size",
    type=click.IntRange(min=1),
    help="Leave out files larger than this many bytes.",
)
@click.option(
    "--allow-secret",
    "allow_secrets",
    multiple=True,
    metavar="PATH",
    help="Keep this file as it is though it holds a detected secret (relative to the "
    "repository's top; audited). Repeatable.",
)
@json_option
@pass_ctx
def checkpoint(
    ctx: Context,
    task_id: str,
    reason: str,
    note: str | None,
    done: tuple[str, ...],
    todo: tuple[str, ...],
    tokens_used: int | None,
    usd_used: float | None,
    force: bool,
    max_file_size: int | None,
    allow_secrets: tuple[str, ...],
    as_json: bool,
) -> None:
    """Snapshot a task's exact working tree and state.

    A file that holds a detected secret is never stored in clear: an untracked one is left out,
    a changed tracked one is stored encrypted and restored exactly; each is listed with the
    rule and line that found it. --allow-secret keeps a named file as it is, audited.
    """
    from core.engine import CheckpointRequest
    from core.models import CheckpointReason
    from tui.quick_checkpoint import checkpoint_output  # the click-free path prints the same

    human, document = checkpoint_output(
        ctx.engine(),
        task_id,
        CheckpointRequest(
            reason=CheckpointReason(reason),
            note=note,
            done=done,
            todo=todo,
            tokens_used=tokens_used,
            usd_used=usd_used,
            force=force,
            max_file_bytes=max_file_size,
            # Run inside one of the task's directories (its repository, a resume's worktree):
            # that one is snapshot; run elsewhere, the one the task works in now.
            workdir_hint=os.getcwd(),
            allow_secrets=allow_secrets,
        ),
    )
    if as_json:
        click.echo(document)
    else:
        say(human)


@click.command()
@click.argument("task_id")
@json_option
@pass_ctx
def checkpoints(ctx: Context, task_id: str, as_json: bool) -> None:
    """List a task's checkpoints, oldest first."""
    from tui.quick import checkpoints_text

    click.echo(checkpoints_text(ctx.engine(), task_id, as_json))


@click.command()
@click.argument("ref", metavar="TASK@SEQ")
@json_option
@pass_ctx
def show(ctx: Context, ref: str, as_json: bool) -> None:
    """Show a checkpoint's manifest; a damaged checkpoint is reported and exits 1."""
    from tui.quick import show_text

    text, damaged = show_text(ctx.engine(), ref, as_json)
    click.echo(text)
    if damaged:
        click.echo(damaged, err=True)
        sys.exit(1)


@click.command()
@click.argument("ref", metavar="TASK@SEQ")
@click.option(
    "--against",
    type=click.Choice(["base", "previous"]),
    default="base",
    show_default=True,
    help="Compare with the base commit or the previous checkpoint.",
)
@click.option("--stat", is_flag=True, help="Only the changed files with line counts.")
@json_option
@pass_ctx
def diff(ctx: Context, ref: str, against: str, stat: bool, as_json: bool) -> None:
    """Show a checkpoint's changes as a unified diff."""
    engine = ctx.engine()
    if stat or as_json:
        changes = engine.changed_files(ref, against)
        if as_json:
            document: dict[str, Any] = {"ref": ref, "against": against, "files": changes}
            if not stat:
                document["diff"] = engine.diff(ref, against)
            emit(True, document, "")
            return
        for change in changes:
            stats = "binary" if change.is_binary else f"+{change.added} -{change.deleted}"
            say(f"{change.status} {change.path}  {stats}")
        return
    click.echo(engine.diff(ref, against), nl=False)


@click.command()
@click.argument("ref", metavar="TASK@SEQ")
@click.option("--into", required=True, type=click.Path(), help="A new (or empty) directory.")
@json_option
@pass_ctx
def checkout(ctx: Context, ref: str, into: str, as_json: bool) -> None:
    """Write a checkpoint's exact working tree into a new directory."""
    count = ctx.engine().checkout(ref, into)
    target = str(Path(into).expanduser().absolute())
    message = f"wrote {counted(count, 'file')} into {target}"
    emit(as_json, {"ref": ref, "into": target, "files": count}, message)
