"""The Side effects tab: a task's ledger, and the operator's ways to settle an uncertain effect.

Settling is a write, so it runs in a (non-exclusive) thread worker on its own engine, which
audits it with the TUI as the interface; the table is read again after every write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Button, DataTable, Static

from core import clock
from core.errors import PitstopError
from core.ledger.checks import CheckVerdict, shell_quoted
from core.ledger.merge import describe_conflict
from core.models import EffectState, SideEffect
from tui.messages import ActionDone, EffectChecked, EffectsLoaded, LoadFailed
from tui.screens.modals import CheckOutputModal, ConfirmModal, ReasonModal
from tui.widgets.formatting import shown, truncate

if TYPE_CHECKING:
    from tui.host import PitstopHost

EFFECT_GLYPHS = {
    EffectState.PROPOSED: ("○", "$foreground-muted"),
    EffectState.IN_PROGRESS: ("◐", "$warning"),
    EffectState.CONFIRMED: ("✓", "$success"),
    EffectState.FAILED: ("✗", "$error"),
    EffectState.UNCERTAIN: ("?", "$error"),
}


def printable(output: bytes, max_lines: int = 200) -> str:
    """A check's (already redacted) output as text to show: its last `max_lines` lines, with
    how many were left out; escape sequences are shown as `^[`, never acted on."""
    text = output.decode("utf-8", errors="replace").replace("\x1b", "^[").replace("\r", "")
    lines = text.rstrip("\n").splitlines()
    if len(lines) <= max_lines:
        return "\n".join(lines)
    cut = len(lines) - max_lines
    return "\n".join([f"… {cut} earlier lines are in the evidence item", *lines[-max_lines:]])


def effect_state_markup(effect: SideEffect) -> str:
    """A coloured glyph and state; an in-progress effect whose runner died reads `stalled`."""
    glyph, colour = EFFECT_GLYPHS[effect.state]
    label = effect.state.value
    if effect.state is EffectState.IN_PROGRESS and not effect.runner_alive:
        label = "stalled"  # in progress, but its runner is gone
    return f"[{colour}]{glyph} {shown(label)}[/]"


class EffectsTable(DataTable[Any]):
    """One row per side effect, keyed by its idempotency key."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False, id="effects.down"),
        Binding("k", "cursor_up", "Up", show=False, id="effects.up"),
    ]


class EffectsView(Vertical):
    """The side effects of a task, with check / confirm / fail for the highlighted one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "c",
            "check",
            "Check",
            id="effects.check",
            tooltip="Run the effect's precondition check: it settles the effect if it can tell",
        ),
        Binding(
            "y",
            "settle('confirmed')",
            "Confirm",
            id="effects.confirm",
            tooltip="Record that the uncertain action did happen (asks why)",
        ),
        Binding(
            "x",
            "settle('failed')",
            "Fail",
            id="effects.fail",
            tooltip="Record that the uncertain action did not happen (asks why)",
        ),
    ]

    DEFAULT_CSS = """
    EffectsView { height: 1fr; }
    EffectsView #effects-heading { height: auto; padding: 0 1; background: $panel; }
    EffectsView #effects-table { height: 1fr; background: $surface; }
    EffectsView #effects-detail { height: auto; padding: 0 1; background: $panel; }
    EffectsView .tab-buttons { height: auto; padding: 0 1; background: $panel; }
    EffectsView .tab-buttons Button { margin-right: 1; min-width: 10; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.task_id: str | None = None
        self.effects: list[SideEffect] = []
        self.conflicts: dict[str, list[str]] = {}

    @property
    def pitstop(self) -> PitstopHost:
        """The app, typed."""
        return cast("PitstopHost", self.app)

    def compose(self) -> ComposeResult:
        yield Static(id="effects-heading")
        yield EffectsTable(
            id="effects-table",
            cursor_type="row",
            zebra_stripes=True,
            cursor_foreground_priority="renderable",
        )
        yield Static(id="effects-detail")
        with Horizontal(classes="tab-buttons"):
            yield Button("Check", id="effect-check", tooltip="Run the precondition check (c)")
            yield Button("Confirm…", id="effect-confirm", tooltip="It happened (y)")
            yield Button("Fail…", id="effect-fail", variant="error", tooltip="It did not (x)")

    def on_mount(self) -> None:
        table = self.query_one(EffectsTable)
        table.add_column("State", key="state", width=12)
        table.add_column("Key", key="key", width=20)
        table.add_column("Kind", key="kind", width=10)
        table.add_column("Target", key="target", width=18)
        table.add_column("Tries", key="attempts", width=5)
        table.add_column("Updated", key="updated", width=7)

    @property
    def selected(self) -> SideEffect | None:
        """The highlighted side effect."""
        table = self.query_one(EffectsTable)
        if not self.effects or table.cursor_row < 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return next((e for e in self.effects if e.key == key), None)

    def load(self, task_id: str) -> None:
        """Read the task's side effects."""
        self.task_id = task_id
        self._list(task_id)

    @work(thread=True, exit_on_error=False, group="effects-list", exclusive=True)
    def _list(self, task_id: str) -> None:
        try:
            with self.pitstop.engine.for_thread() as engine:
                effects = engine.list_effects(task_id)
                conflicts: dict[str, list[str]] = {}
                for record in engine.ledger_conflicts(task_id, "effect"):
                    conflicts.setdefault(record["entity_id"], []).append(describe_conflict(record))
        except PitstopError as exc:
            self.post_message(LoadFailed("side effects", exc.message))
            return
        self.post_message(EffectsLoaded(task_id, effects, conflicts))

    @on(EffectsLoaded)
    def _loaded(self, event: EffectsLoaded) -> None:
        event.stop()
        if event.task_id != self.task_id:
            return
        keep = self.selected.key if self.selected else None
        self.effects = list(event.effects)
        self.conflicts = event.conflicts
        unsettled = sum(1 for e in self.effects if e.needs_settling)
        heading = f"[b]{shown(event.task_id)}[/] · {len(self.effects)} side effects"
        if unsettled:
            heading += f" · [$error b]{unsettled} unsettled: they block a resume[/]"
        if not self.effects:
            heading = (
                f"[dim]No side effects recorded for {shown(event.task_id)}. An agent records "
                "them with `pitstop effect propose` or `pitstop effect guard`.[/]"
            )
        self.query_one("#effects-heading", Static).update(Content.from_markup(heading))
        table = self.query_one(EffectsTable)
        table.clear()
        for effect in self.effects:
            table.add_row(
                Content.from_markup(effect_state_markup(effect)),
                Text(truncate(effect.key, 20)),
                Text(truncate(effect.kind, 10)),
                Text(truncate(effect.target or "—", 18)),
                Text(str(effect.attempts), justify="right"),
                Text(clock.humanize_age(effect.updated_at), justify="right", style="dim"),
                key=effect.key,
            )
        table.display = bool(self.effects)
        unsettled_keys = [e.key for e in self.effects if e.needs_settling]
        if keep is not None and any(e.key == keep for e in self.effects):
            table.move_cursor(row=table.get_row_index(keep))
        elif unsettled_keys:  # what needs the operator first
            table.move_cursor(row=table.get_row_index(unsettled_keys[0]))
        self._show_detail()

    @on(DataTable.RowHighlighted, "#effects-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_detail()

    def _show_detail(self) -> None:
        effect = self.selected
        detail = self.query_one("#effects-detail", Static)
        buttons = self.query_one(".tab-buttons")
        buttons.display = effect is not None
        if effect is None:
            detail.update("")
            return
        parts = [f"[b]{shown(effect.key)}[/]  {effect_state_markup(effect)}"]
        if effect.target:
            parts.append(f"[dim]target[/] {shown(effect.kind)} → {shown(effect.target)}")
        if effect.check:
            parts.append(f"[dim]check[/] {shown(effect.check)}")
        if effect.note:
            parts.append(f"[dim]note[/]  {shown(effect.note)}")
        if effect.needs_settling:
            parts.append(
                "[$warning]Nobody knows whether this happened. Check it (c), or confirm (y) / "
                "fail (x) it with a reason.[/]"
            )
        parts.extend(f"[$warning]{shown(line)}[/]" for line in self.conflicts.get(effect.key, []))
        detail.update(Content.from_markup("\n".join(parts)))
        settleable = effect.state in (EffectState.IN_PROGRESS, EffectState.UNCERTAIN)
        for button_id in ("#effect-check", "#effect-confirm", "#effect-fail"):
            self.query_one(button_id, Button).disabled = not settleable

    # --- actions -------------------------------------------------------------------------

    def _settleable(self) -> SideEffect | None:
        effect = self.selected
        if effect is None:
            self.notify("No side effect selected.", severity="warning")
            return None
        if effect.state not in (EffectState.IN_PROGRESS, EffectState.UNCERTAIN):
            self.notify(
                f"{effect.key} is {effect.state.value}; only an uncertain or in-progress effect "
                "is settled here.",
                severity="warning",
                markup=False,
            )
            return None
        return effect

    @on(Button.Pressed, "#effect-check")
    def action_check(self) -> None:
        """Show the highlighted effect's precondition check and run it only if the operator
        says so (`No` is focused); the run settles nothing but "it happened" by itself."""
        effect = self._settleable()
        if effect is None:
            return
        if not effect.check:
            self.notify(
                f"{effect.key} has no precondition check; settle it by hand (y / x).",
                severity="warning",
                markup=False,
            )
            return
        origin = (
            "It came from another store (a ledger sync): read it, and run it only if you trust it. "
            if effect.check_foreign
            else ""
        )
        modal = ConfirmModal(
            f"Run the precondition check of {effect.key}?",
            f"{origin}It runs on this machine, as you, with /bin/sh:\n\n"
            f"{shell_quoted(effect.check)}\n\n"
            "exit 0: recorded as happened (confirmed) · exit 1: you read its output and decide "
            "whether it did not happen · anything else settles nothing. Its output is kept as "
            "evidence.",
            action_label="Run the check",
            default_no=True,
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self.notify(f"Checking {effect.key}…", markup=False)
                self._check(effect.task_id, effect.key)

        self.app.push_screen(modal, answered)

    @on(Button.Pressed, "#effect-confirm")
    def _confirm_pressed(self) -> None:
        self.action_settle("confirmed")

    @on(Button.Pressed, "#effect-fail")
    def _fail_pressed(self) -> None:
        self.action_settle("failed")

    def action_settle(self, state: str) -> None:
        """Confirm or fail the highlighted effect, after asking why."""
        effect = self._settleable()
        if effect is None:
            return
        to_state = EffectState(state)
        verb = "did happen" if to_state is EffectState.CONFIRMED else "did NOT happen"
        modal = ReasonModal(
            f"{'Confirm' if to_state is EffectState.CONFIRMED else 'Fail'} {effect.key}",
            f"Record that {effect.kind} → {effect.target or effect.key} {verb}. "
            "This settles the effect for good and is audited. Why?",
            action_label="Confirm" if to_state is EffectState.CONFIRMED else "Mark failed",
        )

        def decided(reason: str | None) -> None:
            if reason is not None:
                self._move(effect.task_id, effect.key, to_state, reason)

        self.app.push_screen(modal, decided)

    @work(thread=True, exit_on_error=False, group="effects-write")
    def _check(self, task_id: str, key: str) -> None:
        try:
            with self.pitstop.engine.for_thread() as engine:
                # The operator has just read the check, whichever store wrote it.
                outcome = engine.run_effect_check(task_id, key, confirmed=True)
        except PitstopError as exc:
            self.post_message(ActionDone("check", exc.message, ok=False))
        else:
            self.post_message(EffectChecked(outcome))

    @on(EffectChecked)
    def _checked(self, event: EffectChecked) -> None:
        event.stop()
        outcome = event.outcome
        effect, result = outcome.effect, outcome.result
        if outcome.settled:
            self.post_message(
                ActionDone("check", f"{effect.key} is now {effect.state.value} ({result.detail})")
            )
            return
        not_happened = result.verdict is CheckVerdict.NOT_HAPPENED
        if not_happened:
            title = f"{effect.key}: its check says it did not happen"
            prompt = (
                f"The check exited 1 ({result.detail}). Read what it printed: a check that could "
                "not reach its target also exits 1. Marking it failed is for good and audited; "
                "leaving it keeps the effect unsettled (and the resume blocked)."
            )
        else:
            title = f"{effect.key}: its check cannot tell"
            prompt = (
                f"Nothing was settled: {result.detail}. Settle it by hand (y / x) once you know."
            )
        modal = CheckOutputModal(title, prompt, printable(result.output), can_settle=not_happened)

        def decided(reason: str | None) -> None:
            if reason is not None:
                evidence = f", evidence #{outcome.evidence_id}" if outcome.evidence_id else ""
                said = f"precondition check exit 1{evidence}, read by the operator: {reason}"
                self._move(effect.task_id, effect.key, EffectState.FAILED, said)
            elif self.task_id is not None:
                self._list(self.task_id)

        self.app.push_screen(modal, decided)

    @work(thread=True, exit_on_error=False, group="effects-write")
    def _move(self, task_id: str, key: str, to_state: EffectState, reason: str) -> None:
        try:
            with self.pitstop.engine.for_thread() as engine:
                effect = engine.move_effect(task_id, key, to_state, reason=reason)
        except PitstopError as exc:
            self.post_message(ActionDone("settle", exc.message, ok=False))
        else:
            self.post_message(ActionDone("settle", f"{key} is now {effect.state.value}"))

    @on(ActionDone)
    def _done(self, event: ActionDone) -> None:
        self.notify(
            event.message,
            title="Side effect" if event.ok else "Side effect not changed",
            severity="information" if event.ok else "error",
            markup=False,
        )
        if self.task_id is not None:
            self._list(self.task_id)
