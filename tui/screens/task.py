"""One task: its checkpoint timeline on the left, the selected checkpoint's tabs on the right."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Header, OptionList, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState, get_current_worker

from core.errors import PitstopError
from core.models import Checkpoint, CheckpointState, Task
from tui.messages import (
    CheckpointLoaded,
    CheckpointsLoaded,
    DiffLoaded,
    LoadFailed,
    TrustLoaded,
)
from tui.widgets.approvals_view import ApprovalsTable, ApprovalsView
from tui.widgets.diff_view import DiffView
from tui.widgets.effects_view import EffectsTable, EffectsView
from tui.widgets.evidence_view import EvidenceTable, EvidenceView
from tui.widgets.formatting import counted, repo_name, shown, status_markup, truncate
from tui.widgets.overview import CheckpointOverview, trust_markup
from tui.widgets.resume_view import ResumeView
from tui.widgets.timeline import DECISION_PREFIX, CheckpointTimeline
from tui.widgets.validation_view import ValidationView

if TYPE_CHECKING:
    from core.engine import Engine
    from tui.host import PitstopHost


# The heading says what the task is in two lines at 80 columns; the Overview tab has it whole.
HEADING_OBJECTIVE_CHARS = 100


def heading_markup(task: Task, checkpoints: list[Checkpoint]) -> str:
    """`id  ▶ running  objective` and the agent, repo and checkpoint counts under it."""
    complete = sum(1 for c in checkpoints if c.state is CheckpointState.COMPLETE)
    incomplete = len(checkpoints) - complete
    agent = " · ".join(str(part) for part in (task.harness, task.model) if part) or "agent unknown"
    counts = counted(complete, "checkpoint") + (f", {incomplete} incomplete" if incomplete else "")
    objective = truncate(" ".join(task.objective.split()), HEADING_OBJECTIVE_CHARS)
    return (
        f"[b]{shown(task.id)}[/]  {status_markup(task.status)}  {shown(objective)}\n"
        f"[dim]{shown(repo_name(task))} · {shown(agent)} · {counts}[/]"
    )


class TaskScreen(Screen[None]):
    """The checkpoints of one task; `esc` goes back to the dashboard."""

    AUTO_FOCUS = "#timeline"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", id="task.back", tooltip="Back to the task list"),
        Binding(
            "o",
            "show_tab('overview')",
            "Overview",
            show=False,
            id="task.overview",
            tooltip="What the checkpoint says: steps, agent, budgets, environment",
        ),
        Binding(
            "d",
            "show_tab('diff')",
            "Diff",
            show=False,
            id="task.diff",
            tooltip="The checkpoint's changes as a unified diff",
        ),
        Binding(
            "e",
            "show_tab('evidence')",
            "Evidence",
            show=False,
            id="task.evidence",
            tooltip="What commands showed up to this checkpoint: outcomes, tails, full logs",
        ),
        Binding(
            "s",
            "show_tab('effects')",
            "Effects",
            show=False,
            id="task.effects",
            tooltip="The task's side effects: check, confirm or fail an uncertain one",
        ),
        Binding(
            "p",
            "show_tab('approvals')",
            "Approvals",
            show=False,
            id="task.approvals",
            tooltip="The task's approval requests: approve or reject a pending one",
        ),
        Binding(
            "v",
            "show_tab('validation')",
            "Validation",
            show=False,
            id="task.validation",
            tooltip="Run every restore check on this checkpoint, live",
        ),
        Binding(
            "u",
            "show_tab('resume')",
            "Resume",
            show=False,
            id="task.resume",
            tooltip="Prepare a resume of this checkpoint, read its brief, launch the agent",
        ),
        Binding(
            "b",
            "toggle_against",
            "Base/previous",
            id="task.against",
            tooltip="Compare with the base commit or with the previous checkpoint",
        ),
        Binding("r", "refresh", "Refresh", id="task.refresh", show=False),
        Binding(
            "slash",
            "search",
            "Search",
            key_display="/",
            id="task.search",
            tooltip="Search the diff, or the evidence's full log (n and N: next, previous)",
        ),
    ]

    def __init__(self, task_id: str, select: str | None = None) -> None:
        super().__init__()
        self.task_id = task_id
        self.task_record: Task | None = None
        self.checkpoints: dict[str, Checkpoint] = {}
        self.selected_ref: str | None = None
        self.against = "base"
        self._diff_shown_for: tuple[str, str] | None = None
        self._evidence_shown_for: str | None = None
        self._reselect: str | None = select  # a checkpoint to open on (from the palette)

    @property
    def pitstop(self) -> PitstopHost:
        """The app, typed."""
        return cast("PitstopHost", self.app)

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        yield Static(Content(self.task_id), id="task-heading")
        with Horizontal(id="task-body"):
            with Vertical(id="timeline-pane"):
                yield Static("Checkpoints", id="timeline-title", classes="pane-title")
                yield CheckpointTimeline(id="timeline")
            with TabbedContent(id="tabs", initial="overview"):
                with TabPane("[u]O[/u]verview", id="overview"):
                    yield CheckpointOverview(id="overview-view")
                with TabPane("[u]D[/u]iff", id="diff"):
                    yield DiffView(id="diff-view")
                with TabPane("[u]E[/u]vidence", id="evidence"):
                    yield EvidenceView(id="evidence-view")
                with TabPane("[u]S[/u]ide effects", id="effects"):
                    yield EffectsView(id="effects-view")
                with TabPane("A[u]p[/u]provals", id="approvals"):
                    yield ApprovalsView(id="approvals-view")
                with TabPane("[u]V[/u]alidation", id="validation"):
                    yield ValidationView(id="validation-view")
                with TabPane("Res[u]u[/u]me", id="resume"):
                    yield ResumeView(id="resume-view")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.task_id
        self.query_one(CheckpointOverview).show_message("[dim]Loading checkpoints…[/]")
        self.load_checkpoints()

    # --- workers: each reads the store on its own engine and posts one message ------------------

    @work(thread=True, exit_on_error=False, group="checkpoints", exclusive=True)
    def load_checkpoints(self) -> None:
        """The task and its checkpoint list."""
        try:
            with self.pitstop.engine.for_thread() as engine:
                task = engine.get_task(self.task_id)
                checkpoints = engine.list_checkpoints(self.task_id)
                decisions = engine.checkpoint_decisions(self.task_id)
                roster = engine.roster(self.task_id)
                refused = len(engine.rejected_facts(self.task_id))
                shared = bool(engine.remote_links(self.task_id))
        except PitstopError as exc:
            self.post_message(LoadFailed("task", exc.message))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(CheckpointsLoaded(task, checkpoints, decisions))
            self.post_message(TrustLoaded(self.task_id, roster, refused, shared))

    @work(thread=True, exit_on_error=False, group="checkpoint", exclusive=True)
    def load_checkpoint(self, ref: str) -> None:
        """One checkpoint with its manifest."""
        try:
            with self.pitstop.engine.for_thread() as engine:
                checkpoint = engine.get_checkpoint(ref)
                pays_line = self._pays_line(engine, checkpoint)
        except PitstopError as exc:
            self.post_message(LoadFailed("checkpoint", exc.message, ref))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(CheckpointLoaded(checkpoint, pays_line))

    def _pays_line(self, engine: Engine, checkpoint: Checkpoint) -> str | None:
        """When the next checkpoint pays (#23's model), for the newest checkpoint of a live
        task; None elsewhere, or when the store cannot say."""
        task = self.task_record
        newest = max((cp.seq for cp in self.checkpoints.values()), default=checkpoint.seq)
        if task is None or task.status.is_final or checkpoint.seq < newest:
            return None
        try:
            minutes = engine.minutes_until_it_pays(task.id)
        except PitstopError:
            return None
        if minutes is None:
            return "restart stays cheaper than a checkpoint for 8 h of work at these rates"
        if minutes == 0:
            return "a checkpoint pays now"
        return f"the next checkpoint pays after ~{minutes} min of work"

    @work(thread=True, exit_on_error=False, group="diff", exclusive=True)
    def load_diff(self, ref: str, against: str) -> None:
        """Changed files and the unified diff; git work, so never on the UI thread."""
        try:
            with self.pitstop.engine.for_thread() as engine:
                files = engine.changed_files(ref, against)
                diff = engine.diff(ref, against)
        except PitstopError as exc:
            self.post_message(LoadFailed("diff", exc.message, ref))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(DiffLoaded(ref, against, files, diff))

    # --- results -------------------------------------------------------------------------

    @on(CheckpointsLoaded)
    def _show_checkpoints(self, event: CheckpointsLoaded) -> None:
        self.task_record = event.task
        self.checkpoints = {c.ref: c for c in event.checkpoints}
        self.query_one(ResumeView).task_status = event.task.status
        self.query_one("#task-heading", Static).update(
            Content.from_markup(heading_markup(event.task, event.checkpoints))
        )
        timeline = self.query_one(CheckpointTimeline)
        timeline.show(
            event.checkpoints, select=self.selected_ref or self._reselect, decisions=event.decisions
        )
        self._reselect = None
        if not event.checkpoints:
            self.query_one(CheckpointOverview).show_message(
                f"[dim]No checkpoints yet. An agent makes one with "
                f"`pitstop checkpoint {shown(self.task_id)}`.[/]"
            )
            self.query_one(DiffView).show_message("[dim]No checkpoints yet.[/]")
        # The store changed (or the user refreshed): the task-wide ledgers may have too.
        active = self.query_one(TabbedContent).active
        if active == "effects":
            self.query_one(EffectsView).load(self.task_id)
        elif active == "approvals":
            self.query_one(ApprovalsView).load(self.task_id)

    @on(TrustLoaded)
    def _show_trust(self, event: TrustLoaded) -> None:
        self.query_one(CheckpointOverview).show_trust(
            trust_markup(event.task_id, event.roster, event.refused, event.shared)
        )

    @on(OptionList.OptionHighlighted, "#timeline")
    def _checkpoint_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        ref = event.option.id
        if ref is None or ref == self.selected_ref or ref.startswith(DECISION_PREFIX):
            return  # a skipped decision selects nothing (it is never highlighted anyway)
        self.selected_ref = ref
        self.query_one(CheckpointOverview).show_message(f"[dim]Loading {shown(ref)}…[/]")
        self.load_checkpoint(ref)
        self._diff_shown_for = None
        self._evidence_shown_for = None
        self.query_one(ValidationView).show_checkpoint(ref)
        self.query_one(ResumeView).show_checkpoint(ref)
        active = self.query_one(TabbedContent).active
        if active == "diff":
            self._refresh_diff()
        elif active == "evidence":
            self._refresh_evidence()

    @on(CheckpointLoaded)
    def _show_checkpoint(self, event: CheckpointLoaded) -> None:
        if event.checkpoint.ref != self.selected_ref or self.task_record is None:
            return
        self.checkpoints[event.checkpoint.ref] = event.checkpoint
        self.query_one(CheckpointOverview).show(
            self.task_record, event.checkpoint, pays_line=event.pays_line
        )

    @on(DiffLoaded)
    def _show_diff(self, event: DiffLoaded) -> None:
        if (event.ref, event.against) != (self.selected_ref, self.against):
            return  # the user has moved on; a newer load is on its way
        checkpoint = self.checkpoints.get(event.ref)
        self.query_one(DiffView).show(
            event.ref,
            event.against,
            checkpoint.base_commit if checkpoint else None,
            event.files,
            event.diff,
        )

    @on(LoadFailed)
    def _load_failed(self, event: LoadFailed) -> None:
        if event.ref is not None and event.ref != self.selected_ref:
            return
        message = f"[$error]Could not load the {shown(event.what)}:[/] {shown(event.message)}"
        if event.what == "diff":
            self.query_one(DiffView).show_message(message)
            self._diff_shown_for = None
        elif event.what == "checkpoint":
            self.query_one(CheckpointOverview).show_message(message)
        else:
            self.notify(
                event.message,
                title=f"Could not load the {event.what}",
                severity="error",
                markup=False,
            )

    @on(Worker.StateChanged)
    def _worker_crashed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            self.notify(
                str(event.worker.error),
                title="Something went wrong",
                severity="error",
                markup=False,
            )

    # --- the diff tab ----------------------------------------------------------------------

    @on(TabbedContent.TabActivated, "#tabs")
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        tab = event.pane.id
        if tab == "diff":
            self._refresh_diff()
        elif tab == "evidence":
            self._refresh_evidence()
            self._focus_in_tab(EvidenceTable)
        elif tab == "effects":
            self.query_one(EffectsView).load(self.task_id)
            self._focus_in_tab(EffectsTable)
        elif tab == "approvals":
            self.query_one(ApprovalsView).load(self.task_id)
            self._focus_in_tab(ApprovalsTable)
        elif tab == "validation":
            self.query_one(ValidationView).focus()
        elif tab == "resume":
            self.query_one(ResumeView).focus()

    def _focus_in_tab(self, widget_type: type[Widget]) -> None:
        """Put the keyboard in the tab's table, so its keys show in the footer."""
        target = self.query_one(widget_type)
        self.call_after_refresh(target.focus)

    def _refresh_evidence(self) -> None:
        ref = self.selected_ref
        if ref is None or self._evidence_shown_for == ref:
            return
        self._evidence_shown_for = ref
        self.query_one(EvidenceView).load(ref)

    def _refresh_diff(self) -> None:
        ref = self.selected_ref
        if ref is None or self._diff_shown_for == (ref, self.against):
            return
        self._diff_shown_for = (ref, self.against)
        view = self.query_one(DiffView)
        checkpoint = self.checkpoints.get(ref)
        if checkpoint is not None and checkpoint.state is not CheckpointState.COMPLETE:
            view.show_message(
                f"[$checkpoint-incomplete b]{shown(ref)} is {checkpoint.state.value}:[/] "
                "it has no verified snapshot to compare. Pick a complete checkpoint."
            )
            return
        view.show_message(f"[dim]Computing the diff of {shown(ref)} against {self.against}…[/]")
        self.load_diff(ref, self.against)

    # --- actions ---------------------------------------------------------------------------

    def action_back(self) -> None:
        """Back to the dashboard."""
        self.app.pop_screen()

    def action_show_tab(self, tab: str) -> None:
        """Switch to one of the checkpoint's tabs."""
        tabs = self.query_one(TabbedContent)
        if tab != tabs.active and self.focused is not None and tabs in self.focused.ancestors:
            # A focused widget in the pane being hidden would pull its pane back to the front.
            self.set_focus(None)
        tabs.active = tab

    def action_search(self) -> None:
        """`/` on the Diff or Evidence tab, wherever the focus is: search what it shows."""
        active = self.query_one(TabbedContent).active
        if active == "diff":
            self.query_one(DiffView).action_search()
        elif active == "evidence":
            self.query_one(EvidenceView).action_search()
        else:
            self.notify("/ searches the Diff (d) and Evidence (e) tabs.", severity="warning")

    def action_toggle_against(self) -> None:
        """Compare with the base commit, or with the previous complete checkpoint."""
        self.against = "previous" if self.against == "base" else "base"
        self._diff_shown_for = None
        tabs = self.query_one(TabbedContent)
        if tabs.active == "diff":
            self._refresh_diff()
        else:
            tabs.active = "diff"

    def action_refresh(self) -> None:
        """Read the checkpoints again, staying on the selected one."""
        self._reselect, self.selected_ref = self.selected_ref, None
        self._diff_shown_for = None
        self._evidence_shown_for = None
        self.load_checkpoints()
