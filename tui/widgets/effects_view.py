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
from core.ledger.checks import shell_quoted
from core.ledger.merge import describe_conflict
from core.models import EffectState, SideEffect
from tui.messages import ActionDone, EffectsLoaded, LoadFailed
from tui.screens.modals import ConfirmModal, ReasonModal
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
        yield EffectsTable(id="effects-table", cursor_type="row", zebra_stripes=True)
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
        """Run the highlighted effect's precondition check in a worker.

        A check another store wrote is shown first and runs only if the operator says so.
        """
        effect = self._settleable()
        if effect is None:
            return
        if not (effect.check_foreign and effect.check):
            self._start_check(effect, confirmed=False)
            return
        modal = ConfirmModal(
            f"Run another store's check for {effect.key}?",
            "This precondition check came from another store (a ledger sync). It runs on "
            f"this machine, as you, with /bin/sh:\n\n{shell_quoted(effect.check)}\n\n"
            "Run it only if you have read it and trust it.",
            action_label="Run it",
            default_no=True,
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._start_check(effect, confirmed=True)

        self.app.push_screen(modal, answered)

    def _start_check(self, effect: SideEffect, *, confirmed: bool) -> None:
        self.notify(f"Checking {effect.key}…", markup=False)
        self._check(effect.task_id, effect.key, confirmed)

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
    def _check(self, task_id: str, key: str, confirmed: bool) -> None:
        try:
            with self.pitstop.engine.for_thread() as engine:
                outcome = engine.check_effect(task_id, key, confirmed=confirmed)
        except PitstopError as exc:
            self.post_message(ActionDone("check", exc.message, ok=False))
        else:
            self.post_message(
                ActionDone(
                    "check",
                    f"{key} is now {outcome.effect.state.value} ({outcome.result.detail})",
                )
            )

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
