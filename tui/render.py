"""Human and JSON renderings of engine results for the command line.

JSON output is one document per command, built from the same records the engine returns;
human output is plain aligned text that reads well in a pipe and in a terminal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from enum import Enum

from core import clock
from core.models import Checkpoint, Task
from tui.widgets.formatting import counted

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any


def jsonable(value: Any) -> Any:
    """Turn records (dataclasses and the models' named tuples), enums and tuples into JSON types.

    One look-up per value: each type's conversion is worked out once (`_converter`), so a
    listing of thousands of records costs a dict look-up per value, not a chain of type tests.
    """
    kind = type(value)
    if kind in _PLAIN:
        return value
    convert = _CONVERTERS.get(kind)
    if convert is None:
        convert = _CONVERTERS[kind] = _converter(kind)
    return convert(value)


_PLAIN = frozenset({str, int, float, bool, type(None)})
_CONVERTERS: dict[type, Callable[[Any], Any]] = {}


def _identity(value: Any) -> Any:
    return value


def _converter(kind: type) -> Callable[[Any], Any]:
    """How `jsonable` turns a value of this type into JSON types (the first rule that fits)."""
    if hasattr(kind, "__dataclass_fields__") and not issubclass(kind, type):
        import dataclasses  # loaded already: the record's own module defined it

        record: Any = kind
        names = tuple(field.name for field in dataclasses.fields(record))
        return lambda value: {name: jsonable(getattr(value, name)) for name in names}
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):
        fields = tuple(kind._fields)
        if issubclass(kind, Checkpoint):
            return lambda value: {
                **{name: jsonable(item) for name, item in zip(fields, value, strict=True)},
                "ref": value.ref,
            }
        return lambda value: {
            name: jsonable(item) for name, item in zip(fields, value, strict=True)
        }
    if issubclass(kind, Enum):
        return lambda value: value.value
    if issubclass(kind, dict):
        return lambda value: {str(k): jsonable(v) for k, v in value.items()}
    if issubclass(kind, (list, tuple)):
        return lambda value: [jsonable(v) for v in value]
    return _identity


def dumps(document: Any) -> str:
    """The one JSON document a command prints with `--json`."""
    from core.terminal_text import printable_json

    return printable_json(json.dumps(jsonable(document), indent=2, ensure_ascii=False))


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Left-aligned columns separated by two spaces, headers first; each cell on one line, any
    control character in it shown escaped (`core.terminal_text`)."""
    from core.terminal_text import printable

    text_rows = [
        [("" if cell is None else printable(str(cell), single_line=True)) for cell in row]
        for row in rows
    ]
    widths = [len(h) for h in headers]
    for row in text_rows:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for row in text_rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


def human_bytes(count: int | None) -> str:
    """`1.2 MiB`-style sizes."""
    if count is None:
        return "-"
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"


def budget_text(used: float, limit: float | None, unit: str) -> str:
    """`1200/5000 tokens (24%)` or just the amount used when there is no limit."""
    amount = f"{used:g}"
    if limit is None:
        return f"{amount} {unit}"
    share = f" ({used / limit:.0%})" if limit else ""
    return f"{amount}/{limit:g} {unit}{share}"


def task_detail(task: Task, recipients: Sequence[str] = ()) -> str:
    """Every field of a task, one per line; its recipients (public keys) one per line too."""
    lines = [
        f"task        {task.id}",
        f"status      {task.status.value}",
        f"objective   {task.objective}",
        f"repository  {task.repo_root}",
        f"harness     {task.harness or '-'}",
        f"model       {task.model or '-'}",
        f"tokens      {budget_text(task.tokens_used, task.budget.tokens, 'tokens')}",
        f"cost        {budget_text(task.usd_used, task.budget.usd, 'USD')}",
    ]
    if task.budget.minutes is not None:
        lines.append(f"time budget {task.budget.minutes:g} minutes")
    if task.credentials:
        lines.append(f"credentials {', '.join(task.credentials)}")
    if task.approvers:
        lines.append(f"approvers   {', '.join(task.approvers)}")
    for index, recipient in enumerate(recipients):
        lines.append(f"{'recipients' if index == 0 else '':<11} {recipient}")
    lines.append(f"created     {task.created_at} ({clock.humanize_age(task.created_at)} ago)")
    lines.append(f"updated     {task.updated_at}")
    return "\n".join(lines)


def checkpoint_rows(checkpoints: Sequence[Checkpoint]) -> str:
    """The checkpoint timeline of one task."""
    return table(
        ["ref", "state", "reason", "age", "changed", "left out", "added", "note"],
        [
            (
                c.ref,
                c.state.value,
                c.reason.value,
                clock.humanize_age(c.created_at),
                c.changed_count,
                c.left_out_count,
                human_bytes(c.bytes_added),
                (c.note or c.failure or "")[:60],
            )
            for c in checkpoints
        ],
    )


def manifest_text(checkpoint: Checkpoint, problems: Sequence[str]) -> str:
    """A readable summary of a checkpoint's manifest."""
    m = checkpoint.manifest or {}
    repo = m.get("repository", {})
    snap = m.get("snapshot", {})
    steps = m.get("steps", {})
    budget = m.get("budget", {})
    lines = [
        f"checkpoint  {checkpoint.ref}  ({checkpoint.state.value}, {checkpoint.reason.value})",
        f"created     {checkpoint.created_at}",
    ]
    if checkpoint.failure:
        lines.append(f"failure     {checkpoint.failure}")
    if problems:
        lines.append("DAMAGED     " + "; ".join(problems))
    if not m:
        return "\n".join(lines)
    lines += [
        f"objective   {m['task']['objective']}",
        f"note        {m['checkpoint'].get('note') or '-'}",
        f"repository  {repo.get('toplevel')}",
        f"branch      {repo.get('branch') or '(detached)'} at {str(repo.get('base_commit'))[:12]}",
        f"snapshot    worktree {str(snap.get('worktree_tree'))[:12]}, "
        f"staged {str(snap.get('index_tree'))[:12]}",
        f"harness     {_named(m.get('harness'))}   model {_named(m.get('model'))}",
        f"tokens      {budget_text(budget['tokens']['used'], budget['tokens']['limit'], 'tokens')}",
        f"cost        {budget_text(budget['usd']['used'], budget['usd']['limit'], 'USD')}",
        f"stats       {m['stats']['creation_ms']} ms to create, "
        f"{human_bytes(checkpoint.bytes_added)} added",
        "",
        "done:",
        *_bullets("✓", steps.get("done", [])),
        "to do:",
        *_bullets("•", steps.get("todo", [])),
        "",
        "changed files:",
    ]
    for change in snap.get("changed_files", []):
        stats = "binary" if change["added"] is None else f"+{change['added']} -{change['deleted']}"
        moved = f" (from {change['old_path']})" if change.get("old_path") else ""
        lines.append(f"  {change['status']} {change['path']}{moved}  {stats}")
    if m.get("left_out"):
        lines.append("left out:")
        lines += [f"  {item['path']}  — {item['reason']}" for item in m["left_out"]]
    sealed = {(item["path"], item["rule"], item["line"]) for item in snap.get("sealed") or []}
    allowed = {(i["path"], i["rule"], i["line"]) for i in snap.get("allowed_secrets") or []}
    if not sealed and not allowed:
        return "\n".join(lines)
    from core.snapshot.secret_scan import describe_secret

    if sealed:
        lines.append("stored encrypted (a detected secret; restored exactly):")
        lines += [f"  {p}  — {describe_secret(rule, line)}" for p, rule, line in sorted(sealed)]
    if allowed:
        lines.append("kept as is by --allow-secret:")
        lines += [f"  {p}  — {describe_secret(rule, line)}" for p, rule, line in sorted(allowed)]
    return "\n".join(lines)


def secret_lines(manifest: dict[str, Any] | None) -> list[str]:
    """What `pitstop checkpoint` says about files holding a detected secret: each one left out,
    stored encrypted or kept by --allow-secret, with the rule and line (never the value)."""
    from core.snapshot.secret_scan import describe_secret

    snap = (manifest or {}).get("snapshot") or {}
    lines = [
        f"  left out: {item['path']} — {item['reason']}"
        for item in (manifest or {}).get("left_out") or []
        if str(item.get("reason", "")).startswith("contains ")
    ]
    sealed = {(item["path"], item["rule"], item["line"]) for item in snap.get("sealed") or []}
    lines += [
        f"  stored encrypted: {path} — {describe_secret(rule, line)}"
        for path, rule, line in sorted(sealed)
    ]
    allowed = {(i["path"], i["rule"], i["line"]) for i in snap.get("allowed_secrets") or []}
    lines += [
        f"  kept as is (--allow-secret): {path} — {describe_secret(rule, line)}"
        for path, rule, line in sorted(allowed)
    ]
    return lines


def _bullets(mark: str, items: Sequence[str]) -> list[str]:
    return [f"  {mark} {item}" for item in items] or ["  -"]


def _named(value: dict[str, Any] | None) -> str:
    if not value:
        return "-"
    return f"{value['name']}@{value['version']}" if value.get("version") else value["name"]


def evidence_text(item: Any) -> str:
    """The facts of one evidence item, limits included, before its output."""
    import shlex

    command = item.command or {}
    argv = shlex.join(command.get("argv") or []) or "-"
    kept = human_bytes(item.kept_bytes)
    lines = [
        f"evidence    {item.id}  ({item.source}, {item.state}) on task {item.task_id}"
        + (f", checkpoint @{item.checkpoint_seq}" if item.checkpoint_seq else ", next checkpoint"),
        f"command     {argv}",
    ]
    if command.get("cwd"):
        lines.append(f"cwd         {command['cwd']}")
    if command.get("file"):
        lines.append(f"from file   {command['file']}")
    agent = command.get("agent")
    if isinstance(agent, dict) and agent:
        ident = f" ({agent['id']})" if agent.get("id") else ""
        lines.append(f"agent       subagent {agent.get('type') or 'unknown'}{ident}")
    duration = f"{item.duration_ms / 1000:.2f} s" if item.duration_ms is not None else "-"
    lines += [
        f"label       {item.label or '-'}",
        f"started     {item.started_at}  ran {duration}",
        f"outcome     {item.outcome}",
        f"output      {human_bytes(item.bytes_total)} in {counted(item.lines_total, 'line')}, "
        f"sha256 {item.sha256}",
        f"summary     {item.summary_text or '-'}",
        f"stored      {kept} kept as {human_bytes(item.stored_bytes)} compressed+encrypted "
        f"in {item.chunk_count} chunk(s); cap {human_bytes(item.cap_bytes)}",
        f"redaction   {item.redactions} secret(s) redacted, rules {item.ruleset}",
    ]
    if item.truncated:
        lines.append(
            f"TRUNCATED   {human_bytes(item.omitted_bytes)} from the middle were not kept "
            "(over the cap); head and tail kept, sha256 and counts cover the whole stream"
        )
    if item.failure:
        lines.append(f"failure     {item.failure}")
    lines.append(f"tail        last {item.tail_lines} line(s) below; --lines N or --full for more")
    return "\n".join(lines)
