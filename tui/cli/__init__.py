"""The `pitstop` command line: one click group over `core.engine`, `--json` on every command.

Each command (or command group) lives in its own module under `tui/cli/`, named after it; the
table below wires them to the root group, which imports a command's module only when that command
runs. Errors never show a traceback: a `PitstopError` prints its one-line message to stderr and
exits with its code (2 for usage and unknown ids, 1 otherwise). Heavy imports (the engine,
GitPython, Textual) happen inside commands so `pitstop --help` stays fast.
"""

from __future__ import annotations

import sys

import click

from tui.cli.base import Context
from tui.cli.lazy import LazyGroup

EXIT_CODES_HELP = """\b
Exit codes: 0 success; 1 failure (damaged checkpoint, git or store error);
2 usage error or unknown task/checkpoint id; 3, 4 and 5 from `effect` and `approval`
(needs settling, needs approval, busy: see `pitstop effect --help`).
"""

COMMANDS = {
    "approval": "tui.cli.approvals:approval",
    "checkout": "tui.cli.checkpoints:checkout",
    "checkpoint": "tui.cli.checkpoints:checkpoint",
    "checkpoints": "tui.cli.checkpoints:checkpoints",
    "cost": "tui.cli.cost:cost",
    "demo": "tui.cli.dashboard:demo",
    "diff": "tui.cli.checkpoints:diff",
    "doctor": "tui.cli.doctor:doctor",
    "drill": "tui.cli.drill:drill",
    "effect": "tui.cli.effects:effect",
    "evidence": "tui.cli.evidence:evidence",
    "fetch": "tui.cli.remote:fetch",
    "gc": "tui.cli.gc:gc",
    "hook": "tui.cli.hooks:hook",
    "key": "tui.cli.keys:key",
    "locate": "tui.cli.locate:locate",
    "log": "tui.cli.log:log",
    "metrics": "tui.cli.metrics:metrics",
    "push": "tui.cli.remote:push",
    "redact": "tui.cli.redact:redact",
    "remote": "tui.cli.remote:remote_group",
    "resume": "tui.cli.resume:resume",
    "run": "tui.cli.evidence:run",
    "serve": "tui.cli.serve:serve",
    "show": "tui.cli.checkpoints:show",
    "sync": "tui.cli.remote:sync",
    "task": "tui.cli.tasks:task",
    "ui": "tui.cli.dashboard:ui",
    "validate": "tui.cli.resume:validate",
}
"""Every `pitstop` command: its name and the `module:attribute` that defines it."""


@click.group(
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    invoke_without_command=True,
    epilog=EXIT_CODES_HELP,
)
@click.option(
    "--store",
    type=click.Path(file_okay=False),
    envvar="PITSTOP_HOME",
    help="Store directory (default: PITSTOP_HOME, then the platform data dir).",
)
@click.option(
    "--init",
    "init_store",
    is_flag=True,
    help="Create a store at --store DIR if none is there (else one is never made there).",
)
@click.option("--theme", help="Dashboard theme (pitstop-dark, pitstop-light, pitstop-contrast…).")
@click.version_option(package_name="pitstop", prog_name="pitstop")
@click.pass_context
def cli(click_ctx: click.Context, store: str | None, init_store: bool, theme: str | None) -> None:
    """Pitstop: supervise paused AI coding agents.

    Run without a command to open the dashboard.
    """
    # A typed `--store DIR` must already hold a store (a typo never makes one) unless `--init`;
    # PITSTOP_HOME and the platform default are created on first use, as `pitstop demo DIR` is.
    typed = click_ctx.get_parameter_source("store") is click.core.ParameterSource.COMMANDLINE
    click_ctx.obj = Context(store, create=init_store or not typed)
    if click_ctx.invoked_subcommand is None:
        from tui.cli.dashboard import open_dashboard

        open_dashboard(click_ctx.obj.checked_store(), theme)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning every failure into one line and an exit code."""
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
    except Exception as exc:  # one line, as the click-free path words it (`tui.quick`)
        from tui.quick import failure_line

        line, code = failure_line(exc)
        if line is not None:
            click.echo(line, err=True)
        sys.exit(code)
    except KeyboardInterrupt:
        click.echo("pitstop: interrupted", err=True)
        sys.exit(130)
    sys.exit(result if isinstance(result, int) else 0)
