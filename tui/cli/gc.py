"""`pitstop gc`: expire checkpoints by the retention policy, dry-run first, and show what went.

The plan (what expires, what is protected and why) comes from `core.engine.retention`; this
module only prints it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from tui.cli.base import Context, emit, json_option, pass_ctx

if TYPE_CHECKING:
    from core.engine.gc import GcReport


@click.command()
@click.option("--dry-run", is_flag=True, help="List what would expire, and why; change nothing.")
@json_option
@pass_ctx
def gc(ctx: Context, dry_run: bool, as_json: bool) -> None:
    """Expire checkpoints by the retention policy ([retention] in config.toml).

    Never expires a checkpoint of a task with a pending approval or an in_progress/uncertain
    side effect, nor the newest complete checkpoint of a live task. Finished tasks whose every
    checkpoint expired lose their git ref, data key and evidence output; then the store's git
    repositories are pruned and the database vacuumed.
    """
    report = ctx.engine().gc(dry_run=dry_run)
    emit(as_json, report.as_dict(), lambda: _gc_text(report))


def _gc_text(report: GcReport) -> str:
    from tui.render import human_bytes, table

    plan = report.plan
    would = "would " if report.dry_run else ""
    lines = [
        f"gc{' (dry run: nothing changed)' if report.dry_run else ''}: "
        f"{len(plan.expiries)} checkpoint(s) {would}expire "
        f"({human_bytes(plan.expiring_bytes)} written), "
        f"{len(plan.retirements)} finished task(s) {would}retire "
        f"(~{human_bytes(plan.reclaimable_bytes)} reclaimable); "
        f"{plan.kept_checkpoints} checkpoint(s) kept ({human_bytes(plan.kept_bytes)})"
    ]
    rows: list[list[Any]] = [
        ["expire", e.ref, e.rule, human_bytes(e.bytes), e.reason] for e in plan.expiries
    ]
    rows += [["keep", p.ref, p.rule, "", f"protected: {p.why}"] for p in plan.protected]
    rows += [
        [
            "retire",
            r.task_id,
            r.status.value,
            human_bytes(r.checkpoint_bytes + r.evidence_bytes),
            f"delete ref{', data key' if r.has_key else ''}, "
            f"{r.evidence_chunks} evidence output chunk(s)",
        ]
        for r in plan.retirements
    ]
    if rows:
        lines.append(table(["action", "what", "rule", "bytes", "why"], rows))
    lines.extend(f"warning: {warning}" for warning in plan.warnings)
    if not report.dry_run:
        if report.refs_deleted:
            lines.append(f"refs deleted: {', '.join(report.refs_deleted)}")
        if report.bytes_before is not None and report.bytes_after is not None:
            lines.append(
                f"store on disk: {human_bytes(report.bytes_before)} → "
                f"{human_bytes(report.bytes_after)} "
                f"({len(report.repos_pruned)} git repo(s) pruned, database vacuumed)"
            )
    lines.extend(f"problem: {problem}" for problem in report.problems)
    return "\n".join(lines)
