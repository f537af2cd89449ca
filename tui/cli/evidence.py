"""`pitstop run` and `pitstop evidence …`: capture what commands showed, and read it back.

`run` passes the command's output through untouched and exits with the command's own status, so
it can wrap any command in an agent's loop; the evidence line it adds goes to stderr.
"""

from __future__ import annotations

import codecs
import sys
from typing import Any, BinaryIO

import click

from core.terminal_text import printable
from tui.cli.base import Context, emit, json_option, pass_ctx, say
from tui.widgets.formatting import counted


def _limits(cap_mib: float | None, tail_lines: int | None) -> Any:
    from core.evidence.storage import limits_from

    return limits_from(cap_mib, tail_lines)


def _one_line(item: Any) -> str:
    from tui.render import human_bytes

    summary = f", {item.summary_text}" if item.summary else ""
    truncated = ", truncated" if item.truncated else ""
    return (
        f"evidence {item.id} recorded on {item.task_id}: {item.outcome}, "
        f"{human_bytes(item.bytes_total)}, {counted(item.lines_total, 'line')}{summary}{truncated}"
    )


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--task", "task_id", required=True, help="The task the evidence belongs to.")
@click.option("--label", help="A short name for this run (e.g. 'unit tests').")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Stop after SECONDS.")
@click.option("--cap-mib", type=click.FloatRange(min=0.0625), help="Storage cap (compressed).")
@click.option("--tail-lines", type=click.IntRange(min=1), help="Lines kept in the tail.")
@click.option("--quiet", is_flag=True, help="Do not print the evidence line on stderr.")
@json_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@pass_ctx
def run(
    ctx: Context,
    task_id: str,
    label: str | None,
    timeout: float | None,
    cap_mib: float | None,
    tail_lines: int | None,
    quiet: bool,
    as_json: bool,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND (after --), pass its output through, and record it as evidence.

    Exits with the command's own exit code (128+N if signal N killed it, 124 on --timeout).
    """
    argv = list(command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    engine = ctx.engine()
    outcome, item = engine.run_command(
        task_id, argv, label=label, timeout=timeout, limits=_limits(cap_mib, tail_lines)
    )
    # a green install, build or test run: a milestone checkpoint when one pays now
    said = engine.milestone_if_it_pays(task_id, argv, item.id) if outcome.exit_code == 0 else None
    if as_json:
        # The tail was just shown live; `evidence show ID` has it for later.
        emit(True, {"exit_code": outcome.exit_code, "evidence": item._replace(tail=None)}, "")
    elif not quiet:
        click.echo(f"pitstop: {printable(_one_line(item), single_line=True)}", err=True)
        if said is not None:
            click.echo(f"pitstop: {said}", err=True)
    sys.exit(outcome.exit_code)


@click.group()
def evidence() -> None:
    """Record, list and read evidence."""


@evidence.command("add")
@click.option("--task", "task_id", required=True, help="The task the evidence belongs to.")
@click.option("--file", "path", required=True, type=click.Path(), help="The captured output.")
@click.option("--command", "command_text", help="The command that produced it.")
@click.option("--exit", "exit_code", type=int, help="Its exit code.")
@click.option("--duration", type=float, help="How long it ran, in seconds.")
@click.option("--label", help="A short name for it.")
@click.option("--cap-mib", type=click.FloatRange(min=0.0625), help="Storage cap (compressed).")
@json_option
@pass_ctx
def evidence_add(
    ctx: Context,
    task_id: str,
    path: str,
    command_text: str | None,
    exit_code: int | None,
    duration: float | None,
    label: str | None,
    cap_mib: float | None,
    as_json: bool,
) -> None:
    """Record output a harness captured itself."""
    item = ctx.engine().add_evidence_file(
        task_id,
        path,
        command=command_text,
        exit_code=exit_code,
        duration_s=duration,
        label=label,
        limits=_limits(cap_mib, None),
    )
    emit(as_json, item, lambda: _one_line(item))


@evidence.command("list")
@click.argument("spec", metavar="TASK|TASK@SEQ")
@json_option
@pass_ctx
def evidence_list(ctx: Context, spec: str, as_json: bool) -> None:
    """List a task's evidence, or one checkpoint's."""
    from core import clock
    from tui.render import human_bytes, table

    items = ctx.engine().list_evidence(spec)
    if not items and not as_json:
        say(f"no evidence for {spec}; record some with `pitstop run --task … -- CMD`")
        return
    emit(
        as_json,
        items,
        lambda: table(
            ["id", "label", "outcome", "age", "size", "lines", "checkpoint", "summary"],
            [
                (
                    i.id,
                    i.label or "",
                    i.outcome,
                    clock.humanize_age(i.started_at),
                    human_bytes(i.bytes_total) + (" (truncated)" if i.truncated else ""),
                    i.lines_total,
                    _belongs_to(i),
                    i.summary_text,
                )
                for i in items
            ],
        ),
    )


def _belongs_to(item: Any) -> str:
    """`@N`, `next` (the next checkpoint takes it) or `drill` (a drill's replay: none will)."""
    if item.checkpoint_seq:
        return f"@{item.checkpoint_seq}"
    return "drill" if item.source == "drill" else "next"


@evidence.command("show")
@click.argument("evidence_id", type=int)
@click.option("--full", is_flag=True, help="The whole kept output instead of the tail.")
@click.option("--lines", type=click.IntRange(min=1), help="The last N lines of the kept output.")
@json_option
@pass_ctx
def evidence_show(
    ctx: Context, evidence_id: int, full: bool, lines: int | None, as_json: bool
) -> None:
    """Show an evidence item: facts, limits, and its tail (or last lines, or everything)."""
    from tui.render import evidence_text

    engine = ctx.engine()
    item = engine.get_evidence(evidence_id)
    if as_json:
        document: dict[str, Any] = {"evidence": item}
        if lines:
            document["lines"] = [
                line.decode("utf-8", "replace")
                for line in engine.evidence_last_lines(item.id, lines)
            ]
        if full:
            document["output"] = b"".join(engine.evidence_output(item.id)).decode(
                "utf-8", "replace"
            )
        emit(True, document, "")
        return
    say(evidence_text(item))
    say("")
    if full and not sys.stdout.isatty():  # into a pipe or a file: the kept bytes, exactly
        out: BinaryIO = sys.stdout.buffer
        for block in engine.evidence_output(item.id):
            out.write(block)
        out.flush()
    elif full:  # on a terminal: its escape sequences shown, not obeyed
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        for block in engine.evidence_output(item.id):
            say(decoder.decode(block), nl=False)
        say(decoder.decode(b"", final=True), nl=False)
    elif lines:
        for line in engine.evidence_last_lines(item.id, lines):
            say(line.decode("utf-8", "replace"))
    else:
        say(item.tail or "")
