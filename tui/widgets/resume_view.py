"""The Resume tab: prepare a resume of the selected checkpoint, read its brief, launch the agent.

Preparing validates, takes the task's lease and writes a worktree and the brief, so it asks
first and runs in a thread worker. Launching hands the terminal to the harness: the app
suspends (`App.suspend`) until the harness exits, then comes back and reports its exit code.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual import on, work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Markdown, Static

from core.errors import PitstopError
from core.models import TaskStatus
from core.restore.resume import ResumePlan
from tui.messages import ActionDone, ResumePrepared
from tui.screens.modals import ConfirmModal, ReasonModal
from tui.widgets.formatting import shown

if TYPE_CHECKING:
    from tui.host import PitstopHost


class ResumeView(Vertical):
    """The prepared resume's facts and brief; nothing is written until the user confirms."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "prepare",
            "Prepare resume",
            id="resume.prepare",
            tooltip="Validate, take the lease, restore a worktree and write the brief (asks first)",
        ),
        Binding(
            "L",
            "launch",
            "Launch",
            key_display="L",
            id="resume.launch",
            tooltip="Hand the terminal to the agent's harness in the restored worktree",
        ),
        Binding(
            "A",
            "judge(True)",
            "Accept work",
            key_display="A",
            id="resume.accept",
            tooltip="After the agent ran: record that the resumed work is good (asks why)",
        ),
        Binding(
            "X",
            "judge(False)",
            "Reject work",
            key_display="X",
            id="resume.reject",
            tooltip="After the agent ran: record that the resumed work is not good (asks why)",
        ),
        Binding(
            "C",
            "clean_up",
            "Clean up",
            key_display="C",
            id="resume.clean_up",
            tooltip="After a failed launch: remove the worktree and branch it left (asks first)",
        ),
        Binding(
            "O",
            "shell",
            "Shell",
            key_display="O",
            id="resume.shell",
            tooltip="Open a shell in the restored worktree (the app comes back when it exits)",
        ),
    ]

    DEFAULT_CSS = """
    ResumeView { height: 1fr; }
    ResumeView #resume-heading { height: auto; padding: 0 1; background: $panel; }
    ResumeView #resume-brief-scroll { height: 1fr; background: $background; }
    ResumeView #resume-brief { padding: 0 1; background: $background; }
    ResumeView .tab-buttons { height: auto; padding: 0 1; background: $panel; }
    ResumeView .tab-buttons Button { margin-right: 1; }
    """

    can_focus = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ref: str | None = None
        self.plan: ResumePlan | None = None
        self._brief = ""
        self.preparing = False
        self.task_status: TaskStatus | None = None  # the task screen keeps it current
        # After a launch: the plan whose work waits to be judged (accept or reject), and the
        # worktree a failed launch left for the next resume (or a shell) to take up.
        self.ran: ResumePlan | None = None
        self.kept_workdir: str | None = None

    @property
    def pitstop(self) -> PitstopHost:
        """The app, typed."""
        return cast("PitstopHost", self.app)

    def compose(self) -> ComposeResult:
        yield Static(id="resume-heading")
        with VerticalScroll(id="resume-brief-scroll"):
            yield Markdown(id="resume-brief")
        with Horizontal(classes="tab-buttons"):
            yield Button(
                "Prepare resume…", id="resume-prepare", variant="primary", tooltip="(enter)"
            )
            yield Button("Launch", id="resume-launch", variant="success", tooltip="(L)")

    def on_mount(self) -> None:
        self._show_state()

    def show_checkpoint(self, ref: str | None) -> None:
        """Offer to resume `ref`, or show the resume prepared for it."""
        if ref == self.ref:
            return
        self.ref = ref
        self._show_state()

    def _show_state(self) -> None:
        plan = self.plan
        heading = self.query_one("#resume-heading", Static)
        brief = self.query_one("#resume-brief", Markdown)
        prepared_here = plan is not None and plan.ref == self.ref
        launchable = plan is not None and prepared_here and bool(plan.command)
        self.query_one("#resume-launch", Button).disabled = not launchable
        self.query_one("#resume-prepare", Button).disabled = prepared_here
        if plan is not None and prepared_here:
            command = shlex.join(plan.command) if plan.command else "—"
            if len(plan.command) == 3 and plan.command[:2] == ("sh", "-c"):
                command = plan.command[2]  # the harness template, not its shell wrapper
            lines = [
                f"[b]{shown(plan.ref)}[/] prepared · verdict [b]{shown(plan.verdict)}[/] · "
                f"worktree [b]{shown(str(plan.workdir))}[/]"
                + (f" on {shown(plan.branch)}" if plan.branch else ""),
                f"[dim]launch:[/] {shown(command)}  [dim]· L launches it[/]",
            ]
            lines += [f"[$warning]! {shown(warning)}[/]" for warning in plan.warnings]
            heading.update(Content.from_markup("\n".join(lines)))
            brief.update(self._brief)
            return
        if self.ran is not None:
            heading.update(
                Content.from_markup(
                    f"[b]{shown(self.ran.ref)}[/] ran in [b]{shown(str(self.ran.workdir))}[/] · "
                    "judge the work: [b]A[/] accepts it, [b]X[/] rejects it (asks why; releases "
                    "the lease) · O opens a shell there"
                )
            )
            brief.update(self._brief)
            return
        lines = [
            f"[b]{shown(self.ref or 'No checkpoint')}[/] · [dim]enter prepares a resume: it "
            "validates, takes the lease, restores a worktree beside the repository and writes "
            "the agent's brief. Then L launches the agent.[/]"
        ]
        if plan is not None:
            lines.append(
                f"[$warning]A resume of {shown(plan.ref)} is prepared and holds the task's "
                "lease: select that checkpoint to launch it.[/]"
            )
        heading.update(Content.from_markup("\n".join(lines)))
        brief.update("")

    @on(Button.Pressed, "#resume-prepare")
    def action_prepare(self) -> None:
        """Ask, then prepare the resume in a worker."""
        ref = self.ref
        if ref is None:
            self.notify("Select a checkpoint first.", severity="warning")
            return
        if self.preparing:
            self.notify("A resume is already being prepared.")
            return
        if self.plan is not None and self.plan.ref == ref:
            self.notify(f"{ref} is prepared and holds the lease; L launches it.", markup=False)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.preparing = True
                self.query_one("#resume-heading", Static).update(
                    Content.from_markup(f"[dim]Preparing the resume of {shown(ref)}…[/]")
                )
                self._prepare(ref)

        self.app.push_screen(self._confirm_modal(ref), answered)

    def _confirm_modal(self, ref: str) -> ConfirmModal:
        """What preparing does, asked with `No` focused; a finished task says so first."""
        status = self.task_status
        finished = status is not None and status.is_final
        prompt = (
            "Pitstop validates the checkpoint, takes the task's resume lease, creates a git "
            "worktree beside the repository with the checkpoint's files, and writes the "
            "brief. Nothing is launched yet."
        )
        if finished:
            assert status is not None
            prompt = (
                f"This task is {status.value}: its work was finished. Resuming it starts it "
                f"again from {ref}. " + prompt
            )
        return ConfirmModal(
            f"Resume the {status.value} task at {ref}?"
            if status and finished
            else f"Resume {ref}?",
            prompt,
            action_label="Resume the finished task" if finished else "Prepare",
            default_no=True,
        )

    @work(thread=True, exit_on_error=False, group="resume")
    def _prepare(self, ref: str) -> None:
        try:
            with self.pitstop.engine.for_thread() as engine:
                plan = engine.resume(ref)
            brief = plan.brief_md.read_text(encoding="utf-8")
        except PitstopError as exc:
            self.post_message(ActionDone("resume", exc.message, ok=False))
            return
        except OSError as exc:
            self.post_message(ActionDone("resume", f"cannot read the brief: {exc}", ok=False))
            return
        except Exception as exc:  # a bug must still end the preparing state
            self.post_message(ActionDone("resume", f"{type(exc).__name__}: {exc}", ok=False))
            return
        self.post_message(ResumePrepared(plan, brief))

    @on(ResumePrepared)
    def _prepared(self, event: ResumePrepared) -> None:
        event.stop()
        self.preparing = False
        self.plan, self._brief = event.plan, event.brief
        self._show_state()

    @on(ActionDone)
    def _failed(self, event: ActionDone) -> None:
        if event.what != "resume":
            return
        event.stop()
        self.preparing = False
        heading = self.query_one("#resume-heading", Static)
        heading.update(Content.from_markup(f"[$error b]Not resumed:[/] {shown(event.message)}"))
        self.notify(event.message, title="Not resumed", severity="error", markup=False)

    @on(Button.Pressed, "#resume-launch")
    def action_launch(self) -> None:
        """Suspend the app, run the harness in the worktree, and come back when it exits."""
        plan = self.plan
        if plan is None or plan.ref != self.ref:
            self.notify("Prepare a resume of this checkpoint first (enter).", severity="warning")
            return
        try:
            with self.app.suspend():
                code = self.pitstop.engine.launch(plan)
        except SuspendNotSupported:
            self.notify(
                f"This terminal cannot be handed over; run it yourself: {shlex.join(plan.command)}",
                title="Cannot launch here",
                severity="warning",
                markup=False,
            )
            return
        except PitstopError as exc:
            # The engine ended the resume as failed and put the task back; its worktree and
            # brief stay when the harness was not found, for the next resume to take up.
            self.plan, self.ran = None, None
            self.kept_workdir = str(plan.workdir) if plan.workdir.is_dir() else None
            self._show_state()
            self._say_failed(exc.message)
            self.notify(exc.message, title="Launch failed", severity="error", markup=False)
            return
        self.plan, self.ran, self.kept_workdir = None, plan, str(plan.workdir)
        self._show_state()
        self.notify(
            f"The harness exited with {code}. Judge the work: A accepts it, X rejects it.",
            title=f"Back from {plan.ref}",
            severity="information" if code == 0 else "warning",
            markup=False,
        )

    def _say_failed(self, message: str) -> None:
        """The failed launch, and what the tab offers next (in its own keys)."""
        offers = "enter prepares the resume again"
        if self.kept_workdir:
            offers += (
                f" (it takes up {shown(self.kept_workdir)}) · O opens a shell there · "
                "C removes it and its branch"
            )
        self.query_one("#resume-heading", Static).update(
            Content.from_markup(
                f"[$error b]Could not launch:[/] {shown(message)}\n[dim]{offers}[/]"
            )
        )

    def action_judge(self, accepted: bool) -> None:
        """Record whether the resumed work is good, with a reason; releases the lease."""
        ran = self.ran
        if ran is None:
            self.notify(
                "Launch a prepared resume first (L); then judge its work.", severity="warning"
            )
            return
        verb = "Accept" if accepted else "Reject"

        def answered(reason: str | None) -> None:
            if reason:
                self._judge(ran.task_id, accepted, reason)

        self.app.push_screen(
            ReasonModal(
                f"{verb} the resumed work on {ran.task_id}",
                f"The agent ran from {ran.ref} in {ran.workdir}.\n\nWhy? The reason is audited.",
                action_label=verb,
            ),
            answered,
        )

    @work(thread=True, exit_on_error=False, group="resume-judge")
    def _judge(self, task_id: str, accepted: bool, reason: str) -> None:
        try:
            with self.pitstop.engine.for_thread() as engine:
                engine.judge_resume(task_id, accepted, reason)
        except PitstopError as exc:
            self.post_message(ActionDone("judge", exc.message, ok=False))
            return
        verdict = "accepted" if accepted else "rejected"
        self.post_message(ActionDone("judge", f"resumed work on {task_id} {verdict}", ok=True))

    @on(ActionDone)
    def _judged(self, event: ActionDone) -> None:
        if event.what != "judge":
            return
        event.stop()
        if event.ok:
            self.ran = None
            self._show_state()
        self.notify(
            event.message, title="Resume", severity="information" if event.ok else "error",
            markup=False,
        )  # fmt: skip

    def action_clean_up(self) -> None:
        """Ask, then remove the worktree and branch a failed launch left behind."""
        where = self.kept_workdir
        task_id = self.ref.partition("@")[0] if self.ref else None
        if where is None or task_id is None or self.ran is not None:
            self.notify(
                "Nothing to clean up: no failed launch left a worktree.", severity="warning"
            )
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._clean_up(task_id)

        self.app.push_screen(
            ConfirmModal(
                "Remove the resume's worktree?",
                f"{where} and its pitstop/{task_id} branch go; anything changed there is lost. "
                "The checkpoint stays in the store.",
                action_label="Remove",
                default_no=True,
            ),
            answered,
        )

    @work(thread=True, exit_on_error=False, group="resume-clean")
    def _clean_up(self, task_id: str) -> None:
        try:
            with self.pitstop.engine.for_thread() as engine:
                removed = engine.clean_failed_resume(task_id)
        except PitstopError as exc:
            self.post_message(ActionDone("clean", exc.message, ok=False))
            return
        self.post_message(ActionDone("clean", removed, ok=True))

    @on(ActionDone)
    def _cleaned(self, event: ActionDone) -> None:
        if event.what != "clean":
            return
        event.stop()
        if event.ok:
            self.kept_workdir = None
            self._show_state()
        self.notify(
            event.message, title="Resume", severity="information" if event.ok else "error",
            markup=False,
        )  # fmt: skip

    def action_shell(self) -> None:
        """Suspend the app and open the user's shell in the restored worktree."""
        import os
        import subprocess

        where = self.kept_workdir or (str(self.plan.workdir) if self.plan else None)
        if where is None or not os.path.isdir(where):
            self.notify(
                "No restored worktree to open yet (enter prepares one).", severity="warning"
            )
            return
        try:
            with self.app.suspend():
                subprocess.run([os.environ.get("SHELL") or "/bin/sh"], cwd=where, check=False)
        except SuspendNotSupported:
            self.notify(f"This terminal cannot be handed over; cd {where}", markup=False)
