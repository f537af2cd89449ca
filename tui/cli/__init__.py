"""The `pitstop` command line: one click group over `core.engine`, `--json` on every command.

Errors never show a traceback: a `PitstopError` prints its one-line message to stderr and exits
with its code (2 for usage and unknown ids, 1 otherwise). Heavy imports (the engine, GitPython,
Textual) happen inside commands so `pitstop --help` stays fast.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from tui.cli.base import Context, emit, json_option, pass_ctx
from tui.widgets.formatting import counted

EXIT_CODES_HELP = """\b
Exit codes: 0 success; 1 failure (damaged checkpoint, git or store error);
2 usage error or unknown task/checkpoint id; 3, 4 and 5 from `effect` and `approval`
(needs settling, needs approval, busy: see `pitstop effect --help`).
"""


@click.group(invoke_without_command=True, epilog=EXIT_CODES_HELP)
@click.option(
    "--store",
    type=click.Path(file_okay=False),
    envvar="PITSTOP_HOME",
    help="Store directory (default: PITSTOP_HOME, then the platform data dir).",
)
@click.option("--theme", help="Dashboard theme (pitstop-dark, pitstop-light, pitstop-contrast…).")
@click.version_option(package_name="pitstop", prog_name="pitstop")
@click.pass_context
def cli(click_ctx: click.Context, store: str | None, theme: str | None) -> None:
    """Pitstop: supervise paused AI coding agents.

    Run without a command to open the dashboard.
    """
    click_ctx.obj = Context(store)
    if click_ctx.invoked_subcommand is None:
        open_dashboard(store, theme)


def open_dashboard(store: str | None, theme: str | None) -> None:
    """Open the Textual dashboard on a store (Textual is imported only now)."""
    from core.paths import resolve_store_root
    from tui.app import run_dashboard

    run_dashboard(resolve_store_root(store), theme=theme)


@cli.command()
@json_option
@pass_ctx
def locate(ctx: Context, as_json: bool) -> None:
    """Print where the store, database, git repos and config live."""
    paths = ctx.engine().locate()
    emit(as_json, paths, lambda: "\n".join(f"{k:<9} {v}" for k, v in paths.items()))


# --- tasks ----------------------------------------------------------------------------------


@cli.group()
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
    from core import clock
    from core.models import TaskStatus
    from tui.render import table

    wanted = {TaskStatus(s) for s in statuses}
    summaries = [s for s in ctx.engine().task_summaries() if not wanted or s.task.status in wanted]
    if as_json:
        emit(
            True,
            [
                {
                    **_task_json(s.task),
                    "checkpoints": s.checkpoint_count,
                    "last_checkpoint_at": s.last_checkpoint_at,
                }
                for s in summaries
            ],
            "",
        )
        return
    if not summaries:
        click.echo("no tasks yet; start one with `pitstop task start --repo . --objective …`")
        return
    click.echo(
        table(
            ["id", "status", "age", "checkpoints", "objective"],
            [
                (
                    s.task.id,
                    s.task.status.value,
                    clock.humanize_age(s.task.updated_at),
                    s.checkpoint_count,
                    s.task.objective[:60],
                )
                for s in summaries
            ],
        )
    )


def _task_json(task_obj: Any) -> dict[str, Any]:
    from tui.render import jsonable

    data: dict[str, Any] = jsonable(task_obj)
    return data


@task.command("show")
@click.argument("task_id")
@json_option
@pass_ctx
def task_show(ctx: Context, task_id: str, as_json: bool) -> None:
    """Show one task and the recipients its remote copies are encrypted to."""
    from tui.render import task_detail

    engine = ctx.engine()
    found = engine.get_task(task_id)
    shared = engine.task_recipients(task_id)
    emit(as_json, {**_task_json(found), "recipients": shared}, lambda: task_detail(found, shared))


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


# --- checkpoints ----------------------------------------------------------------------------


@cli.command()
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
    as_json: bool,
) -> None:
    """Snapshot a task's exact working tree and state."""
    from core.engine import CheckpointRequest
    from core.models import CheckpointReason
    from tui.render import human_bytes

    result = ctx.engine().checkpoint(
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
        ),
    )
    if result.checkpoint is None:
        emit(as_json, {"skipped": True, "message": result.skipped}, result.skipped or "")
        return
    made = result.checkpoint
    left_out = f", {made.left_out_count} left out" if made.left_out_count else ""
    emit(
        as_json,
        {"skipped": False, "checkpoint": made},
        f"checkpoint {made.ref} complete: {made.changed_count} changed file(s){left_out}, "
        f"{human_bytes(made.bytes_added)} added in {made.creation_ms} ms",
    )


@cli.command()
@click.argument("task_id")
@json_option
@pass_ctx
def checkpoints(ctx: Context, task_id: str, as_json: bool) -> None:
    """List a task's checkpoints, oldest first."""
    from tui.render import checkpoint_rows

    found = ctx.engine().list_checkpoints(task_id)
    if not found and not as_json:
        click.echo(f"task {task_id} has no checkpoints yet; run `pitstop checkpoint {task_id}`")
        return
    emit(as_json, found, lambda: checkpoint_rows(found))


@cli.command()
@click.argument("ref", metavar="TASK@SEQ")
@json_option
@pass_ctx
def show(ctx: Context, ref: str, as_json: bool) -> None:
    """Show a checkpoint's manifest; a damaged checkpoint is reported and exits 1."""
    from tui.render import manifest_text

    engine = ctx.engine()
    found = engine.get_checkpoint(ref)
    problems = engine.verify(found) if found.state.value == "complete" else []
    emit(
        as_json,
        {"checkpoint": found, "damaged": bool(problems), "problems": problems},
        lambda: manifest_text(found, problems),
    )
    if problems:
        click.echo(f"pitstop: checkpoint {found.ref} is damaged: {problems[0]}", err=True)
        sys.exit(1)


@cli.command()
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
            click.echo(f"{change.status} {change.path}  {stats}")
        return
    click.echo(engine.diff(ref, against), nl=False)


@cli.command()
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


@cli.command()
@click.argument("task_id", required=False)
@json_option
@pass_ctx
def log(ctx: Context, task_id: str | None, as_json: bool) -> None:
    """Show the audit log: who changed what, when, through which interface, and why."""
    from tui.render import table

    events = ctx.engine().events(task_id)
    emit(
        as_json,
        events,
        lambda: table(
            ["at", "actor", "via", "entity", "action", "change", "reason"],
            [
                (
                    e.at[:19].replace("T", " "),
                    e.actor,
                    e.interface.value,
                    f"{e.entity} {e.entity_id}",
                    e.action,
                    f"{e.from_state or '-'} → {e.to_state or '-'}",
                    e.reason or "",
                )
                for e in events
            ],
        ),
    )


@cli.command()
@click.option(
    "--store",
    "ui_store",
    type=click.Path(file_okay=False),
    help="Store directory (default: the group's --store, PITSTOP_HOME, the platform data dir).",
)
@click.option("--theme", "ui_theme", help="Dashboard theme (pitstop-dark, pitstop-light…).")
@click.pass_context
def ui(click_ctx: click.Context, ui_store: str | None, ui_theme: str | None) -> None:
    """Open the dashboard (the same as `pitstop` with no command)."""
    group = click_ctx.find_object(Context)
    parent_theme = click_ctx.parent.params.get("theme") if click_ctx.parent else None
    open_dashboard(ui_store or (group.store if group else None), ui_theme or parent_theme)


def _new_demo_dir() -> Path:
    """A new, empty directory for a demo store, beside where demos are kept."""
    import tempfile

    from core.paths import demo_store_root

    parent = demo_store_root().parent
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="demo-", dir=parent))


@cli.command()
@click.argument("directory", metavar="[DIR]", required=False, type=click.Path(file_okay=False))
@click.option("--no-ui", is_flag=True, help="Build the demo store and print its path only.")
@click.option("--no-open", "no_open", is_flag=True, hidden=True, help="Alias of --no-ui.")
@click.option("--theme", "demo_theme", help="Dashboard theme.")
@json_option
@click.pass_context
def demo(
    click_ctx: click.Context,
    directory: str | None,
    no_ui: bool,
    no_open: bool,
    demo_theme: str | None,
    as_json: bool,
) -> None:
    """Build a demo store in DIR (default: a new directory) and open the dashboard on it.

    The demo holds real git repositories and tasks in every situation: ready to resume, waiting
    on a high-risk approval, an uncertain deploy, a branch that moved, an incomplete checkpoint,
    finished work. Afterwards `pitstop --store DIR …` works on it like on any store.
    """
    from core.demo import build_demo_store

    group = click_ctx.find_object(Context)
    # `pitstop --store DIR demo` builds in DIR; PITSTOP_HOME (the real store) never gets the demo.
    typed_store = (
        click_ctx.parent is not None
        and click_ctx.parent.get_parameter_source("store") is click.core.ParameterSource.COMMANDLINE
    )
    if directory:
        root = Path(directory)
    elif group and group.store and typed_store:
        root = Path(group.store)
    else:
        root = _new_demo_dir()
    root = root.expanduser().absolute()
    task_ids = build_demo_store(root)
    parent_theme = click_ctx.parent.params.get("theme") if click_ctx.parent else None
    if no_ui or no_open or as_json:
        emit(
            as_json,
            {"store": str(root), "tasks": task_ids},
            f"demo store ready at {root} with {len(task_ids)} tasks; "
            f"open it with: pitstop --store {root}",
        )
        return
    click.echo(f"demo store at {root}; after quitting, open it again with: pitstop --store {root}")
    open_dashboard(str(root), demo_theme or parent_theme)


def _register_command_modules() -> None:
    """Attach the commands that live in their own modules (each imports only click at load)."""
    from tui.cli import modules as cli_modules

    for register in cli_modules.REGISTRARS:
        register(cli)


_register_command_modules()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning every failure into one line and an exit code."""
    from core.errors import PitstopError

    try:
        result = cli.main(args=argv, prog_name="pitstop", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("pitstop: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        hint = ""
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            hint = f" (see `{exc.ctx.command_path} --help`)"
        click.echo(f"pitstop: {exc.format_message()}{hint}", err=True)
        sys.exit(exc.exit_code)
    except PitstopError as exc:
        click.echo(f"pitstop: {exc.message}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("pitstop: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(1)
    except Exception as exc:  # a bug: still one line, with a way to see more
        if os.environ.get("PITSTOP_DEBUG"):
            raise
        click.echo(
            f"pitstop: internal error ({type(exc).__name__}: {exc}); "
            "rerun with PITSTOP_DEBUG=1 for details and please report it",
            err=True,
        )
        sys.exit(1)
    sys.exit(result if isinstance(result, int) else 0)
