"""`pitstop ui` and `pitstop demo`, and what bare `pitstop` runs: the Textual dashboard.

Textual is imported only when the dashboard opens, so no other command pays for it.
"""

from __future__ import annotations

from pathlib import Path

import click

from tui.cli.base import Context, emit, json_option, say


def open_dashboard(store: str | None, theme: str | None) -> None:
    """Open the Textual dashboard on a store (Textual is imported only now)."""
    from core.paths import resolve_store_root
    from tui.app import run_dashboard

    run_dashboard(resolve_store_root(store), theme=theme)


@click.command()
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
    store = ui_store or (group.checked_store() if group else None)
    open_dashboard(store, ui_theme or parent_theme)


def _new_demo_dir() -> Path:
    """A new, empty directory for a demo store, beside where demos are kept."""
    import tempfile

    from core.paths import demo_store_root

    parent = demo_store_root().parent
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="demo-", dir=parent))


@click.command()
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
    say(f"demo store at {root}; after quitting, open it again with: pitstop --store {root}")
    open_dashboard(str(root), demo_theme or parent_theme)
