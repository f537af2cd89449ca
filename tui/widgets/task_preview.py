"""The panel under the task table: the highlighted task in full, without opening it."""

from __future__ import annotations

from pathlib import Path

from textual.content import Content
from textual.widgets import Static

from core import clock
from core.engine import TaskSummary
from core.engine.attention import attention
from tui.remotes import DashboardRow, RemoteSummary, no_key_help
from tui.trust_text import refused_hint
from tui.widgets.formatting import (
    bar_markup,
    counted,
    human_count,
    minutes_used,
    repo_name,
    shown,
    status_markup,
)


def _money(value: float) -> str:
    return f"${value:,.0f}" if float(value).is_integer() else f"${value:,.2f}"


def budget_lines(
    tokens: tuple[float, float | None],
    usd: tuple[float, float | None],
    minutes: tuple[float, float | None] | None = None,
    width: int = 24,
    label_width: int = 8,
) -> list[str]:
    """Markup lines `tokens ━━━━ 1.3M / 2.0M 66%` for each budget, set or not."""
    rows: list[tuple[str, float, float | None, str]] = [
        ("tokens", tokens[0], tokens[1], "tokens"),
        ("usd", usd[0], usd[1], "usd"),
    ]
    if minutes is not None:
        rows.append(("minutes", minutes[0], minutes[1], "minutes"))
    lines = []
    for label, used, limit, kind in rows:
        if kind == "usd":
            spent = _money(used) + (f"/{_money(limit)}" if limit else "")
        elif kind == "tokens":
            spent = human_count(used) + (f"/{human_count(limit)}" if limit else "")
        else:
            spent = f"{used:,.0f}" + (f"/{limit:,.0f}" if limit else "") + " min"
        fraction = used / limit if limit else None
        share = f" {fraction:.0%}" if fraction is not None else " no limit"
        lines.append(f"[dim]{label:<{label_width}}[/]{bar_markup(fraction, width)} {spent}{share}")
    return lines


class TaskPreview(Static):
    """Objective, agent, repository and budgets of one task (or where a remote one lives)."""

    def show_first_run(self, store: str) -> None:
        """An empty store: say how tasks get here, instead of an empty table and no clue."""
        self.update(Content.from_markup("\n".join(first_run_lines(store))))

    def show(
        self, summary: DashboardRow | None, shared_with: tuple[str, ...] = (), refused: int = 0
    ) -> None:
        """Describe `summary`'s task, or say that nothing is selected; `shared_with` lists the
        remotes a local task travels through, `refused` how many facts from them were refused."""
        if summary is None:
            self.update(Content.from_markup("[dim]No task selected.[/]"))
            return
        if isinstance(summary, RemoteSummary):
            self.update(Content.from_markup("\n".join(remote_lines(summary))))
            return
        task = summary.task
        minutes = minutes_used(task, summary.last_checkpoint_at) if task.budget.minutes else None
        agent = " · ".join(str(part) for part in (task.harness, task.model) if part) or "unknown"
        last = (
            f"{clock.humanize_age(summary.last_checkpoint_at)} ago"
            if summary.last_checkpoint_at
            else "none yet"
        )
        lines = [
            f"[b]{shown(task.id)}[/]  {status_markup(task.status)}  "
            f"[dim]started {clock.humanize_age(task.created_at)} ago · "
            f"last checkpoint {last} · {counted(summary.checkpoint_count, 'checkpoint')}[/]",
            shown(task.objective),
            f"[dim]agent[/]     {shown(agent)}",
            f"[dim]repo[/]      {shown(repo_name(task))} [dim]{shown(task.repo_root)}[/]",
            *budget_lines(
                (task.tokens_used, task.budget.tokens),
                (task.usd_used, task.budget.usd),
                (minutes, task.budget.minutes) if minutes is not None else None,
            ),
        ]
        lines[2:2] = triage_lines(summary)
        if shared_with:
            lines.append(
                f"[dim]shared[/]    [$accent]⇅[/] {shown(', '.join(shared_with))} "
                "[dim]· S syncs · f fetches its newest checkpoints[/]"
            )
        if refused:
            hint = shown(refused_hint(task.id, refused))
            lines.append(f"[dim]trust[/]     [b $error]⚠[/] {hint}")
        self.update(Content.from_markup("\n".join(lines)))


def first_run_lines(store: str) -> list[str]:
    """How to get a first task into the store at `store`: the demo, a harness, or by hand."""
    return [
        f"[b]No tasks in this store yet[/] [dim]({shown(store)}; it fills in live)[/]. To start:",
        "  [b]pitstop demo[/]                      [dim]a demo store: seven tasks, not this one[/]",
        "  [b]pitstop hook install claude-code[/]  [dim]or codex: checkpoint its sessions here[/]",
        "  [b]pitstop task start --repo . --objective TEXT[/]  [dim]track one by hand[/]",
    ]


def triage_lines(summary: TaskSummary) -> list[str]:
    """What waits for a person in the task (weightiest first), its ledger and its verdict."""
    result = attention(summary)
    facts = summary.triage
    if result.needs_person:
        needs = " · ".join(shown(reason) for reason in result.reasons)
        lines = [f"[dim]needs you[/] [b $warning]{needs}[/]"]
    else:
        lines = ["[dim]needs you[/] [$success]nothing[/]"]
    ledger = [f"{summary.pending_approvals} approvals pending"]
    if summary.pending_approvals and facts.oldest_pending_at:
        ledger[0] += f" (oldest {clock.humanize_age(facts.oldest_pending_at)})"
    ledger.append(f"{summary.uncertain_effects} uncertain")
    if facts.in_progress_effects:
        ledger.append(f"{facts.in_progress_effects} in progress")
    lines.append(f"[dim]ledger[/]    {' · '.join(ledger)}")
    if summary.last_verdict:
        when = f" {clock.humanize_age(facts.validated_at)} ago" if facts.validated_at else ""
        verdict = f"[dim]verdict[/]   [b]{shown(summary.last_verdict)}[/][dim]{when}[/]"
        if facts.verdict_outdated:
            why = (
                f"branch {shown(facts.validated_branch or '')} moved since"
                if facts.branch_moved
                else "its inputs changed since"
            )
            verdict += f" [$warning]· out of date: {why}; validate again[/]"
        lines.append(verdict)
    else:
        lines.append("[dim]verdict[/]   [dim]not validated yet[/]")
    if facts.drill_verdict:
        colour = {"faithful": "$success", "drifted": "$error"}.get(facts.drill_verdict, "$warning")
        when = f" {clock.humanize_age(facts.drilled_at)} ago" if facts.drilled_at else ""
        lines.append(
            f"[dim]drill[/]     [{colour}]{shown(facts.drill_verdict)}[/][dim]{when} · "
            "D on the Validation tab drills again[/]"
        )
    return lines


def remote_lines(summary: RemoteSummary) -> list[str]:
    """Markup lines for a task seen on a remote and not in this store."""
    task = summary.task
    latest = (
        f"latest @{summary.latest_seq} {clock.humanize_age(summary.last_checkpoint_at)} ago"
        if summary.latest_seq is not None and summary.last_checkpoint_at
        else "no checkpoints yet"
    )
    seen = f"listed {clock.humanize_age(summary.seen_at)} ago" if summary.seen_at else "listed"
    where = shown(home_relative(summary.url))
    if summary.remote_name:
        where = f"{shown(summary.remote_name)} [dim]{where}[/]"
    lines = [
        f"[b]{shown(task.id)}[/]  {status_markup(task.status)}  [b $accent]↓ remote[/]  "
        f"[dim]{counted(summary.checkpoint_count, 'checkpoint')} · {latest} · {seen}[/]",
        f"[dim]lives on[/]  {where}",
        "[dim]Only its plain header is here; objective, diff and evidence stay encrypted "
        "until it is fetched.[/]",
    ]
    if summary.readable:
        into = (
            f"your clone {shown(home_relative(summary.local_repo))}"
            if summary.local_repo
            else "the clone in the current directory"
        )
        lines.append(
            f"[b]enter[/] or [b]f[/] fetches it into this store, for {into}; it then validates "
            "and resumes like a local task."
        )
    else:
        lines.append(f"[b $warning]no key[/]  {shown(no_key_help(task.id))}")
    return lines


def home_relative(path: str) -> str:
    """`~/code/app` for a path under the home directory; anything else as it is."""
    home = str(Path.home())
    return "~" + path[len(home) :] if path.startswith(home + "/") else path
