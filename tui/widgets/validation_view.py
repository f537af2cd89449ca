"""The Validation tab: run every restore check on the selected checkpoint and watch them land.

The checks run in a thread worker; each finding is posted as it comes (`ValidationProgress`
coalesces a burst into the newest), and the stored report ends the run with its verdict.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, LoadingIndicator, Static

from core import clock
from core.errors import PitstopError
from core.restore.validate import Finding, Status, Verdict
from tui.messages import (
    DrillFinished,
    DrillProgress,
    StoredValidationLoaded,
    ValidationFinished,
    ValidationProgress,
)
from tui.widgets.formatting import shown

if TYPE_CHECKING:
    from tui.drill_runner import DrillOutcome
    from tui.host import PitstopHost

STATUS_MARKUP = {
    Status.PASS: "[$success b]✓[/]",
    Status.WARN: "[$warning b]![/]",
    Status.FAIL: "[$error b]✗[/]",
    Status.UNKNOWN: "[$foreground-muted b]?[/]",
}

VERDICT_MARKUP = {
    Verdict.READY: "[$success b]ready[/] — resume it",
    Verdict.READY_WITH_WARNINGS: "[$warning b]ready with warnings[/] — read them, then resume",
    Verdict.STALE: "[$warning b]stale[/] — the world moved since the pause; resume only knowingly",
    Verdict.BLOCKED: "[$error b]blocked[/] — fix what failed before resuming",
    Verdict.UNSUPPORTED: "[$error b]unsupported[/] — this Pitstop cannot resume it",
}


def finding_markup(finding: Finding) -> str:
    """`✓ check  message`, with the fix under it when the check did not pass."""
    check = shown(finding.check.ljust(13))
    line = f"{STATUS_MARKUP[finding.status]} [b]{check}[/] {shown(finding.message)}"
    if finding.fix and finding.status is not Status.PASS:
        line += f"\n    [dim]fix:[/] {shown(finding.shown_fix)}"
    return line


class ValidationView(Vertical):
    """Findings of the latest run on the selected checkpoint, live while it runs."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "run",
            "Validate",
            id="validation.run",
            tooltip="Run every restore check on the selected checkpoint (stored and audited)",
        ),
        Binding(
            "D",
            "drill",
            "Drill",
            key_display="D",
            id="validation.drill",
            tooltip="A planned interruption: restore into a scratch tree, replay the recorded "
            "tests and compare (D again cancels it)",
        ),
    ]

    DEFAULT_CSS = """
    ValidationView { height: 1fr; }
    ValidationView #validation-drill { height: auto; max-height: 8; padding: 0 1; }
    ValidationView #validation-drill { background: $panel; }
    ValidationView #validation-heading { height: auto; padding: 0 1; background: $panel; }
    ValidationView #validation-findings { height: 1fr; padding: 0 1; background: $background; }
    ValidationView #validation-verdict { height: auto; padding: 0 1; background: $panel; }
    ValidationView .tab-buttons { height: auto; padding: 0 1; background: $panel; }
    ValidationView LoadingIndicator { height: 1; display: none; }
    ValidationView.running LoadingIndicator { display: block; }
    """

    can_focus = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ref: str | None = None
        self.running_ref: str | None = None
        self.findings: tuple[Finding, ...] = ()
        self.verdict: Verdict | None = None
        self.progress_shown = 0  # progress messages handled in this run (bursts coalesce)
        self.drilling: str | None = None  # the checkpoint a drill runs on now
        self._cancel_drill = threading.Event()
        self.last_drill: DrillOutcome | None = None

    @property
    def pitstop(self) -> PitstopHost:
        """The app, typed."""
        return cast("PitstopHost", self.app)

    def compose(self) -> ComposeResult:
        yield Static(id="validation-heading")
        with VerticalScroll(id="validation-findings"):
            yield Static(id="validation-list")
        yield LoadingIndicator()
        yield Static(id="validation-verdict")
        yield Static(id="validation-drill")
        with Horizontal(classes="tab-buttons"):
            yield Button(
                "Run validation", id="validation-run", variant="primary", tooltip="(enter)"
            )

    def on_mount(self) -> None:
        self._show_empty()

    def show_checkpoint(self, ref: str | None) -> None:
        """Forget the last run's findings when another checkpoint is selected."""
        if ref == self.ref:
            return
        self.ref = ref
        self._show_empty()
        if ref is not None:
            self._load_stored(ref)

    @work(thread=True, exit_on_error=False, group="stored-validation")
    def _load_stored(self, ref: str) -> None:
        try:
            with self.pitstop.engine.for_thread() as engine:
                stored = engine.stored_validation(ref)
        except PitstopError:
            stored = None  # an unreadable row leaves the tab as it is: run the checks again
        self.post_message(StoredValidationLoaded(ref, stored))

    @on(StoredValidationLoaded)
    def _stored(self, event: StoredValidationLoaded) -> None:
        event.stop()
        stored = event.stored
        if stored is None or event.ref != self.ref or self.running_ref is not None:
            return
        if self.verdict is not None:  # a run finished here meanwhile: it is newer
            return
        try:
            verdict = Verdict(stored.verdict)
        except ValueError:
            verdict = None
        self.findings = stored.findings
        self._render_findings()
        age = clock.humanize_age(stored.at)
        shown_verdict = VERDICT_MARKUP[verdict] if verdict else shown(stored.verdict)
        self.query_one("#validation-verdict", Static).update(
            Content.from_markup(
                f"[b]Verdict:[/] {shown_verdict}  [dim]· {self._counts()} · "
                f"stored {age} ago ({shown(stored.at)}) by {shown(stored.actor)} via "
                f"{shown(stored.interface)} · enter runs the checks again[/]"
            )
        )

    def _counts(self) -> str:
        """`3 passed, 1 warnings, 0 failed, 0 unknown` for the findings shown."""
        counts = {status: 0 for status in Status}
        for finding in self.findings:
            counts[finding.status] += 1
        return (
            f"{counts[Status.PASS]} passed, {counts[Status.WARN]} warnings, "
            f"{counts[Status.FAIL]} failed, {counts[Status.UNKNOWN]} unknown"
        )

    def _show_empty(self) -> None:
        self.findings, self.verdict = (), None
        target = shown(self.ref) if self.ref else "the selected checkpoint"
        self.query_one("#validation-heading", Static).update(
            Content.from_markup(
                f"[b]{target}[/] · [dim]press enter to run every restore check "
                "(base commit, branch, lockfiles, runtime, credentials, effects, approvals…)[/]"
            )
        )
        self.query_one("#validation-list", Static).update("")
        self.query_one("#validation-verdict", Static).update("")

    @on(Button.Pressed, "#validation-run")
    def action_run(self) -> None:
        """Validate the selected checkpoint in a worker."""
        if self.ref is None:
            self.notify("Select a checkpoint first.", severity="warning")
            return
        if self.running_ref is not None:
            self.notify(f"Already validating {self.running_ref}.", markup=False)
            return
        self.running_ref = self.ref
        self.findings, self.verdict = (), None
        self.progress_shown = 0
        self.add_class("running")
        self.query_one("#validation-run", Button).disabled = True
        self.query_one("#validation-list", Static).update(
            Content.from_markup("[dim]Running checks…[/]")
        )
        self.query_one("#validation-verdict", Static).update("")
        self._validate(self.ref)

    @work(thread=True, exit_on_error=False, group="validation")
    def _validate(self, ref: str) -> None:
        seen: list[Finding] = []

        def progress(finding: Finding) -> None:
            seen.append(finding)
            self.post_message(ValidationProgress(ref, tuple(seen)))

        try:
            with self.pitstop.engine.for_thread() as engine:
                report = engine.validate(ref, progress=progress)
        except PitstopError as exc:
            self.post_message(ValidationFinished(ref, None, exc.message))
            return
        except Exception as exc:  # a bug must still end the run, or the tab stays busy
            self.post_message(ValidationFinished(ref, None, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(ValidationFinished(ref, report))

    @on(ValidationProgress)
    def _progress(self, event: ValidationProgress) -> None:
        event.stop()
        if event.ref == self.ref and event.ref == self.running_ref:
            self.findings = event.findings
            self.progress_shown += 1
            self._render_findings()

    @on(ValidationFinished)
    def _finished(self, event: ValidationFinished) -> None:
        event.stop()
        self.running_ref = None
        self.remove_class("running")
        self.query_one("#validation-run", Button).disabled = False
        if event.ref != self.ref:
            return
        verdict = self.query_one("#validation-verdict", Static)
        if event.report is None:
            verdict.update(
                Content.from_markup(f"[$error b]Could not validate:[/] {shown(event.error or '')}")
            )
            return
        self.findings, self.verdict = event.report.findings, event.report.verdict
        self._render_findings()
        verdict.update(
            Content.from_markup(
                f"[b]Verdict:[/] {VERDICT_MARKUP[self.verdict]}  [dim]· {self._counts()} · "
                f"stored with the checkpoint just now[/]"
                + (f"\n{shown(event.report.advice)}" if event.report.advice else "")
            )
        )

    def _render_findings(self) -> None:
        self.query_one("#validation-list", Static).update(
            Content.from_markup("\n".join(finding_markup(f) for f in self.findings))
        )

    # --- restore drill ---------------------------------------------------------------------

    def action_drill(self) -> None:
        """Drill the selected checkpoint in a worker; pressed again while it runs, cancel it."""
        if self.drilling is not None:
            self._cancel_drill.set()
            self._drill_line(f"[$warning]Cancelling the drill of {shown(self.drilling)}…[/]")
            return
        if self.ref is None:
            self.notify("Select a checkpoint first.", severity="warning")
            return
        self.drilling = self.ref
        self._cancel_drill = threading.Event()
        self._drill_line(
            f"[b]Drilling {shown(self.ref)}[/]: restoring into a scratch tree, then replaying "
            "its recorded tests… [dim](D cancels)[/]"
        )
        self._drill(self.ref, self._cancel_drill)

    @work(thread=True, exit_on_error=False, group="drill")
    def _drill(self, ref: str, cancel: threading.Event) -> None:
        from tui.drill_runner import DrillOutcome, run_drill

        def progress(seconds: float, line: str) -> None:
            self.post_message(DrillProgress(ref, seconds, line))

        try:
            outcome = run_drill(self.pitstop.engine.paths.root, ref, progress, cancel)
        except OSError as exc:
            outcome = DrillOutcome(error=f"the drill could not start: {exc}")
        self.post_message(DrillFinished(ref, outcome))

    @on(DrillProgress)
    def _drill_progress(self, event: DrillProgress) -> None:
        event.stop()
        if self._cancel_drill.is_set():
            return
        line = f" [dim]· {shown(event.last_line)}[/]" if event.last_line else ""
        self._drill_line(
            f"[b]Drilling {shown(event.ref)}[/] · {event.seconds:.0f} s{line} [dim](D cancels)[/]"
        )

    @on(DrillFinished)
    def _drill_finished(self, event: DrillFinished) -> None:
        event.stop()
        self.drilling = None
        outcome = event.outcome
        self.last_drill = outcome
        if outcome.cancelled:
            self._drill_line(
                f"[$warning]Drill of {shown(event.ref)} cancelled.[/] [dim]Its scratch tree goes "
                "with the next drill (or `pitstop doctor --fix`).[/]"
            )
        elif outcome.error is not None:
            self._drill_line(f"[$error b]Drill not run:[/] {shown(outcome.error)}")
        else:
            verdict = str((outcome.report or {}).get("verdict", "?"))
            colour = {"faithful": "$success", "drifted": "$error"}.get(verdict, "$warning")
            body = "\n".join(shown(line) for line in outcome.text.splitlines()[1:])
            self._drill_line(f"[b]Drill {shown(event.ref)}:[/] [{colour} b]{verdict}[/]\n{body}")
        self.pitstop.reload_open_screens()  # the dashboard's drill badge

    def _drill_line(self, markup: str) -> None:
        self.query_one("#validation-drill", Static).update(Content.from_markup(markup))
