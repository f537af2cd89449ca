"""The Overview tab: what a checkpoint says about its task, read from the manifest.

Objective, the note, steps done and to do, agent, repository, budgets as bars, environment,
credentials (names and fingerprints, never values), lockfiles and the files left out, and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from core import clock
from core.models import Checkpoint, CheckpointState, Task
from tui.widgets.formatting import (
    checkpoint_markup,
    counted,
    human_bytes,
    short_sha,
    shown,
    status_markup,
)
from tui.widgets.task_preview import budget_lines

LABEL_WIDTH = 9


def _row(label: str, value: str) -> str:
    return f"[dim]{label:<{LABEL_WIDTH}}[/]{value}"


def _named(value: Any) -> str:
    if not isinstance(value, dict) or not value.get("name"):
        return "unknown"
    version = value.get("version")
    return shown(f"{value['name']} {version}" if version else str(value["name"]))


def _home(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home) :] if home != "/" and path.startswith(home + "/") else path


def _budget(manifest: dict[str, Any], kind: str) -> tuple[float, float | None]:
    entry = manifest.get("budget", {}).get(kind, {})
    return float(entry.get("used") or 0), entry.get("limit")


@dataclass(frozen=True)
class OverviewSections:
    """The overview in parts the widget lays out in two columns; empty parts are hidden."""

    head: str
    steps: str = ""
    agent: str = ""
    repository: str = ""
    environment: str = ""
    left_out: str = ""


def _head(checkpoint: Checkpoint) -> list[str]:
    created = clock.parse(checkpoint.created_at).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"[b]{shown(checkpoint.ref)}[/]  {shown(checkpoint.reason.value)}  "
        f"{checkpoint_markup(checkpoint.state)}  [dim]{clock.humanize_age(checkpoint.created_at)}"
        f" ago · {created}[/]",
    ]
    if checkpoint.note:
        lines.append(f"[i]{shown(checkpoint.note)}[/]")
    return lines


def _steps(task: Task, manifest: dict[str, Any]) -> list[str]:
    steps = manifest.get("steps", {})
    done, todo = steps.get("done", []), steps.get("todo", [])
    return [
        "[b $primary]Objective[/]",
        shown(task.objective),
        "",
        f"[b $primary]Steps[/] [dim]{len(done)} done, {len(todo)} to do[/]",
        *(f"[$success]✓[/] {shown(step)}" for step in done),
        *(f"[$warning]○[/] {shown(step)}" for step in todo),
    ]


def _agent(task: Task, manifest: dict[str, Any]) -> list[str]:
    return [
        "[b $primary]Agent[/]",
        _row("status", status_markup(task.status)),
        _row("harness", _named(manifest.get("harness"))),
        _row("model", _named(manifest.get("model"))),
        "",
        "[b $primary]Budget[/]",
        *budget_lines(
            _budget(manifest, "tokens"),
            _budget(manifest, "usd"),
            _budget(manifest, "minutes"),
            width=10,
            label_width=8,
        ),
    ]


def _repository(task: Task, manifest: dict[str, Any]) -> list[str]:
    repository = manifest.get("repository", {})
    lines = [
        "[b $primary]Repository[/]",
        _row("branch", shown(str(repository.get("branch") or "detached"))),
        _row("base", short_sha(repository.get("base_commit"))),
    ]
    upstream = repository.get("upstream") or {}
    if upstream.get("name"):
        head = short_sha(upstream.get("head"))
        lines.append(_row("upstream", f"{shown(upstream['name'])} {head}"))
    lines.append(_row("path", shown(_home(str(repository.get("toplevel", task.repo_root))))))
    lockfiles = manifest.get("lockfiles", {})
    if lockfiles:
        lines += ["", "[b $primary]Lockfiles[/]"]
        lines += [_row(shown(path), short_sha(blob)) for path, blob in sorted(lockfiles.items())]
    return lines


def _environment(manifest: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    environment = manifest.get("environment", {})
    if environment:
        system = f"{environment.get('os', '?')} {environment.get('os_release', '')}".strip()
        lines += [
            "[b $primary]Environment[/]",
            _row("os", shown(system)),
            _row("arch", shown(str(environment.get("arch", "?")))),
            _row("python", shown(str(environment.get("python", "?")))),
            _row("git", shown(str(environment.get("git", "?")))),
            _row("host", shown(str(environment.get("hostname", "?")))),
        ]
    credentials = manifest.get("credentials", [])
    if credentials:
        lines += ["", "[b $primary]Credentials[/] [dim]fingerprints only[/]"]
        for credential in credentials:
            fingerprint = shown(str(credential.get("fingerprint", ""))[:24])
            state = (
                f"[$success]present[/] [dim]{fingerprint}…[/]"
                if credential.get("present")
                else "[$error]missing[/]"
            )
            lines += [shown(str(credential.get("name"))), f"  {state}"]
    return lines


def _left_out(manifest: dict[str, Any]) -> list[str]:
    left_out = manifest.get("left_out", [])
    files = counted(len(left_out), "file")
    lines = [f"[b $primary]Left out[/] [dim]{files} not in the snapshot[/]"]
    for item in left_out:
        size = f" ({human_bytes(item['size'])})" if item.get("size") is not None else ""
        lines.append(
            f"[$warning]![/] {shown(str(item.get('path')))} [dim]— "
            f"{shown(str(item.get('reason')))}{size}[/]"
        )
    return lines


_PINNED_SHORT = {
    "created": "founded here",
    "first-use": "trusted on first fetch",
    "expected": "pinned as expected",
}


def trust_markup(task_id: str, roster: dict[str, Any] | None, refused: int, shared: bool) -> str:
    """Who founded the task (fingerprint, how it is trusted) and any refused facts; empty for
    a task that never left this store and has nothing refused."""
    from tui.trust_text import UNSIGNED, refused_hint, who_decides

    lines = []
    if roster is not None:
        pinned = _PINNED_SHORT.get(str(roster.get("pinned")), "not pinned")
        lines.append(
            f"[b $primary]Owner[/] [b]{shown(str(roster['owner']))}[/] [dim]{pinned} · "
            f"{counted(len(roster['members']), 'member')} · may decide: "
            f"{shown(who_decides(roster))}[/]"
        )
    elif shared:
        lines.append(f"[b $primary]Owner[/] [$warning]{UNSIGNED}[/]")
    if refused:
        lines.append(f"[b $error]⚠[/] {shown(refused_hint(task_id, refused))}")
    return "\n".join(lines)


def overview_sections(task: Task, checkpoint: Checkpoint) -> OverviewSections:
    """The overview of one checkpoint as Textual content markup, by section."""
    head = _head(checkpoint)
    if checkpoint.state is not CheckpointState.COMPLETE:
        head += [
            "",
            f"[$checkpoint-incomplete b]This checkpoint is {checkpoint.state.value} and cannot "
            "be resumed.[/]",
            shown(checkpoint.failure or "It was never completed."),
            "[dim]Pick a complete checkpoint in the timeline.[/]",
        ]
        return OverviewSections(head="\n".join(head))
    manifest = checkpoint.manifest or {}
    return OverviewSections(
        head="\n".join(head),
        steps="\n".join(_steps(task, manifest)),
        agent="\n".join(_agent(task, manifest)),
        repository="\n".join(_repository(task, manifest)),
        environment="\n".join(_environment(manifest)),
        left_out="\n".join(_left_out(manifest)),
    )


_SECTION_IDS = ("steps", "agent", "repository", "environment", "left_out")


class CheckpointOverview(VerticalScroll):
    """A scrollable overview of the selected checkpoint, in two columns."""

    def compose(self) -> ComposeResult:
        yield Static(id="overview-head", classes="overview-section")
        yield Static(id="overview-trust", classes="overview-section")
        with Horizontal(classes="overview-row"):
            yield Static(id="overview-steps", classes="overview-section")
            yield Static(id="overview-agent", classes="overview-section")
        with Horizontal(classes="overview-row"):
            yield Static(id="overview-repository", classes="overview-section")
            yield Static(id="overview-environment", classes="overview-section")
        yield Static(id="overview-left_out", classes="overview-section")

    def show(self, task: Task, checkpoint: Checkpoint, pays_line: str | None = None) -> None:
        """Describe `checkpoint` of `task` (and, for the newest, when the next one pays)."""
        sections = overview_sections(task, checkpoint)
        head = sections.head
        if pays_line:
            head += f"\n[dim]{shown(pays_line)} (pitstop cost --why)[/]"
        self.query_one("#overview-head", Static).update(Content.from_markup(head))
        for name in _SECTION_IDS:
            markup = getattr(sections, name)
            widget = self.query_one(f"#overview-{name}", Static)
            widget.update(Content.from_markup(markup))
            widget.display = bool(markup)
        self.scroll_home(animate=False)

    def on_mount(self) -> None:
        self.query_one("#overview-trust", Static).display = False

    def show_trust(self, markup: str) -> None:
        """Show the task's owner and refused facts above every checkpoint (empty: nothing)."""
        widget = self.query_one("#overview-trust", Static)
        widget.update(Content.from_markup(markup))
        widget.display = bool(markup)

    def show_message(self, markup: str) -> None:
        """Replace the overview with one message (loading, or an error)."""
        self.query_one("#overview-head", Static).update(Content.from_markup(markup))
        for name in _SECTION_IDS:
            self.query_one(f"#overview-{name}", Static).display = False

    @property
    def text(self) -> str:
        """Everything the overview shows, as plain text (for tests and copying)."""
        shown = [self.query_one("#overview-head", Static)]
        if (trust := self.query_one("#overview-trust", Static)).display:
            shown.append(trust)
        shown += [
            widget
            for name in _SECTION_IDS
            if (widget := self.query_one(f"#overview-{name}", Static)).display
        ]
        return "\n".join(str(widget.render()) for widget in shown)
