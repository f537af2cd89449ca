"""Small modal dialogs the screens share: ask for a reason, confirm a destructive action, read
what a precondition check printed before settling by it.

They dismiss with a value and never touch the store themselves: the screen that pushed them does
the write (in a worker) once it has the answer, so the same dialogs serve the task screen's tabs
and the approvals inbox. Where a dialog can change a decision or an effect, `enter` on it as it
opens does the safe thing.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from core.terminal_text import printable

_MODAL_CSS = """
ReasonModal, ConfirmModal, CheckOutputModal {
    align: center middle;
    background: $background 60%;
}

ReasonModal > Vertical, ConfirmModal > Vertical, CheckOutputModal > Vertical {
    width: 72;
    max-width: 90%;
    height: auto;
    padding: 1 2;
    border: thick $primary;
    background: $surface;
}

ReasonModal .modal-title, ConfirmModal .modal-title, CheckOutputModal .modal-title {
    text-style: bold;
    color: $primary;
    margin-bottom: 1;
}

ReasonModal .modal-prompt, ConfirmModal .modal-prompt, CheckOutputModal .modal-prompt {
    margin-bottom: 1;
}

ReasonModal .modal-error, CheckOutputModal .modal-error {
    color: $error;
    height: auto;
}

ReasonModal .modal-buttons, ConfirmModal .modal-buttons, CheckOutputModal .modal-buttons {
    height: auto;
    margin-top: 1;
    align-horizontal: right;
}

ReasonModal Button, ConfirmModal Button, CheckOutputModal Button {
    margin-left: 2;
}

CheckOutputModal .check-output {
    height: auto;
    max-height: 12;
    background: $panel;
    padding: 0 1;
    margin-bottom: 1;
}
"""


class ReasonModal(ModalScreen[str | None]):
    """Ask for a reason; dismiss with the stripped text, or None when cancelled.

    An empty reason is refused in place: every decision Pitstop records says why.
    """

    DEFAULT_CSS = _MODAL_CSS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="modal.cancel", tooltip="Close without deciding"),
    ]

    def __init__(
        self, title: str, prompt: str, *, action_label: str = "OK", placeholder: str = "Reason"
    ) -> None:
        super().__init__()
        self.title_text = title
        self.prompt_text = prompt
        self.action_label = action_label
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="reason-dialog"):
            yield Label(Content(printable(self.title_text)), classes="modal-title")
            yield Static(Content(printable(self.prompt_text)), classes="modal-prompt")
            yield Input(placeholder=self.placeholder, id="reason-input")
            yield Static("", id="reason-error", classes="modal-error")
            with Horizontal(classes="modal-buttons"):
                yield Button("Cancel", id="reason-cancel")
                yield Button(self.action_label, id="reason-ok", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#reason-input", Input).focus()

    @on(Input.Submitted, "#reason-input")
    @on(Button.Pressed, "#reason-ok")
    def _submit(self) -> None:
        reason = self.query_one("#reason-input", Input).value.strip()
        if not reason:
            self.query_one("#reason-error", Static).update("A reason is required.")
            return
        self.dismiss(reason)

    @on(Button.Pressed, "#reason-cancel")
    def action_cancel(self) -> None:
        """Close the dialog without a reason."""
        self.dismiss(None)


class ConfirmModal(ModalScreen[bool]):
    """Ask yes or no before a destructive or slow action: `No` is focused, so `enter` as the
    dialog opens does nothing; `y` or the action's button goes ahead, `n`/`esc` do not."""

    DEFAULT_CSS = _MODAL_CSS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes", tooltip="Go ahead"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no", tooltip="Do nothing"),
    ]

    def __init__(
        self, title: str, prompt: str, *, action_label: str = "Yes", default_no: bool = True
    ) -> None:
        super().__init__()
        self.title_text = title
        self.prompt_text = prompt
        self.action_label = action_label
        self.default_no = default_no  # `enter` on the open dialog does nothing risky

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Label(Content(printable(self.title_text)), classes="modal-title")
            yield Static(Content(printable(self.prompt_text)), classes="modal-prompt")
            with Horizontal(classes="modal-buttons"):
                yield Button("No", id="confirm-no")
                yield Button(self.action_label, id="confirm-yes", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#confirm-no" if self.default_no else "#confirm-yes", Button).focus()

    @on(Button.Pressed, "#confirm-yes")
    def _yes(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#confirm-no")
    def _no(self) -> None:
        self.dismiss(False)

    def action_answer(self, answer: bool) -> None:
        """Dismiss with `answer`."""
        self.dismiss(answer)


class CheckOutputModal(ModalScreen[str | None]):
    """What a precondition check printed, and (when it says the action did not happen) the
    operator's choice: leave the effect unsettled (focused) or mark it failed, with a reason.

    Dismisses with the reason to record the effect as not happened, or None to settle nothing.
    Without `can_settle` it only shows the output: a check that cannot tell settles nothing.
    """

    DEFAULT_CSS = _MODAL_CSS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave", "Leave it", id="check.leave", tooltip="Settle nothing"),
    ]

    def __init__(self, title: str, prompt: str, output: str, *, can_settle: bool) -> None:
        super().__init__()
        self.title_text = title
        self.prompt_text = prompt
        self.output_text = output
        self.can_settle = can_settle

    def compose(self) -> ComposeResult:
        with Vertical(id="check-dialog"):
            yield Label(Content(self.title_text), classes="modal-title")
            yield Static(Content(self.prompt_text), classes="modal-prompt")
            with VerticalScroll(classes="check-output"):
                yield Static(Content(self.output_text or "(it printed nothing)"), id="check-text")
            if self.can_settle:
                yield Input(
                    placeholder="Why it did not happen (needed to mark it)", id="check-reason"
                )
                yield Static("", id="check-error", classes="modal-error")
            with Horizontal(classes="modal-buttons"):
                yield Button("Leave it unsettled", id="check-leave")
                if self.can_settle:
                    yield Button("Mark: did not happen", id="check-failed", variant="error")

    def on_mount(self) -> None:
        self.query_one("#check-leave", Button).focus()

    @on(Input.Submitted, "#check-reason")
    @on(Button.Pressed, "#check-failed")
    def _mark_failed(self) -> None:
        reason = self.query_one("#check-reason", Input).value.strip()
        if not reason:
            self.query_one("#check-error", Static).update(
                "Type why it did not happen first; the reason is kept in the audit log."
            )
            return
        self.dismiss(reason)

    @on(Button.Pressed, "#check-leave")
    def action_leave(self) -> None:
        """Close, settling nothing."""
        self.dismiss(None)
