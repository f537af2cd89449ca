"""The task screen's checkpoint timeline: newest first, incomplete ones marked and explained.

The automatic checkpoint decisions (issue 23, `core.engine.pays`) are in it too, as
`pitstop log` and `pitstop cost TASK --why` show them: a skipped one is its own greyed entry
with the two amounts the model weighed ("restart costs $0.04, a checkpoint $0.06"), never
highlighted; a taken one adds its amounts under the checkpoint it took.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option, OptionDoesNotExist

from core import clock
from core.models import Checkpoint, CheckpointState
from tui.widgets.formatting import CHECKPOINT_GLYPHS, counted, human_bytes, shown, truncate

NOTE_WIDTH = 29
DECISION_PREFIX = "decision:"  # the option id of a skipped decision: never a checkpoint ref
SKIPPED_GLYPH = "⊘"


def _usd(numbers: Mapping[str, Any], key: str) -> str:
    from core.economics.amounts import money

    return money(Decimal(str(numbers.get(key, 0))))


def decision_line(decision: Mapping[str, Any]) -> str:
    """The amounts a taken decision weighed, one line under its checkpoint: `pays: restart
    $1.85 vs $0.11`, or `taken anyway:` when a wait or the session's end took it unpaid."""
    numbers = decision.get("numbers") or {}
    word = "pays" if numbers.get("take") else "taken anyway"
    amounts = f"restart {_usd(numbers, 'avoided_usd')} vs {_usd(numbers, 'checkpoint_usd')}"
    return f"  [dim]{shown(truncate(f'{word}: {amounts}', NOTE_WIDTH))}[/]"


def skipped_prompt(decision: Mapping[str, Any]) -> Content:
    """A skipped decision: what asked and when; the two amounts; what asked it."""
    numbers = decision.get("numbers") or {}
    age = clock.humanize_age(str(decision.get("at", "")))
    reason = str(decision.get("checkpoint_reason") or "checkpoint")
    outcome = str(decision.get("outcome") or "skipped")
    lines = [f"{SKIPPED_GLYPH} {shown(reason)} skipped [dim]· {age} ago[/]"]
    if outcome == "skipped":  # the model said restart is cheaper
        lines.append(f"  skipped: restart costs {_usd(numbers, 'avoided_usd')},")
        lines.append(f"  a checkpoint {_usd(numbers, 'checkpoint_usd')}")
    else:  # `skipped: trivially restartable`, `skipped: nothing changed since …`
        lines.append(f"  {shown(truncate(outcome, NOTE_WIDTH))}")
    asked = decision.get("asked_by")
    if asked:
        lines.append(f"  [i]{shown(truncate(str(asked), NOTE_WIDTH))}[/]")
    return Content.from_markup("\n".join(lines))


def checkpoint_prompt(checkpoint: Checkpoint, decision: Mapping[str, Any] | None = None) -> Content:
    """Three lines: number, reason and age; state, bytes and files; the note or the failure;
    and the amounts of the automatic decision that took it, if one did."""
    state = checkpoint.state
    colour = f"$checkpoint-{state.value}"
    age = clock.humanize_age(checkpoint.created_at)
    first = (
        f"[{colour}]{CHECKPOINT_GLYPHS[state]}[/] [b]#{checkpoint.seq}[/] "
        f"{shown(checkpoint.reason.value)} [dim]· {age} ago[/]"
    )
    if state is CheckpointState.COMPLETE:
        second = (
            f"  [dim]{human_bytes(checkpoint.bytes_added)} · "
            f"{counted(checkpoint.changed_count, 'file')}"
            + (f" · {checkpoint.left_out_count} left out" if checkpoint.left_out_count else "")
            + "[/]"
        )
        note = checkpoint.note
        third = f"  [i]{shown(truncate(note, NOTE_WIDTH))}[/]" if note else ""
    else:
        second = f"  [{colour} b]{state.value}[/] [dim]· not resumable[/]"
        reason = checkpoint.failure or "not complete"
        third = f"  [{colour}]{shown(truncate(reason, NOTE_WIDTH))}[/]"
    fourth = decision_line(decision) if decision is not None else ""
    lines = (first, second, third, fourth)
    return Content.from_markup("\n".join(line for line in lines if line))


class CheckpointTimeline(OptionList):
    """One option per checkpoint, id `TASK@SEQ`; highlighting one selects it for the tabs."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Next", show=False, id="timeline.down"),
        Binding("k", "cursor_up", "Previous", show=False, id="timeline.up"),
    ]

    def show(
        self,
        checkpoints: Sequence[Checkpoint],
        select: str | None = None,
        decisions: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        """List `checkpoints` newest first, the skipped `decisions` among them by time, and
        highlight `select` (default: the newest complete)."""
        newest_first = sorted(checkpoints, key=lambda c: c.seq, reverse=True)
        took = {
            str(d.get("outcome", "")).removeprefix("taken: "): d
            for d in decisions
            if str(d.get("outcome", "")).startswith("taken: ")
        }
        skipped = sorted(
            (
                (str(d.get("at", "")), i, d)
                for i, d in enumerate(decisions)
                if not str(d.get("outcome", "")).startswith("taken")
            ),
            key=lambda entry: entry[0],
            reverse=True,
        )
        options: list[Option] = []
        for checkpoint in newest_first:  # each skip above the newest checkpoint not after it
            while skipped and skipped[0][0] >= checkpoint.created_at:
                options.append(_skipped_option(*skipped.pop(0)[1:]))
            options.append(
                Option(checkpoint_prompt(checkpoint, took.get(checkpoint.ref)), id=checkpoint.ref)
            )
        options += [_skipped_option(i, d) for _, i, d in skipped]
        self.clear_options()
        self.add_options(options)
        if not newest_first:
            return
        if select is None:
            complete = [c for c in newest_first if c.state is CheckpointState.COMPLETE]
            select = (complete[0] if complete else newest_first[0]).ref
        try:
            self.highlighted = self.get_option_index(select)
        except OptionDoesNotExist:  # `select` is gone: fall back to the newest
            self.highlighted = self.get_option_index(newest_first[0].ref)

    @property
    def selected_ref(self) -> str | None:
        """The highlighted checkpoint's `TASK@SEQ`."""
        if self.highlighted is None:
            return None
        ref = self.get_option_at_index(self.highlighted).id
        return None if ref is None or ref.startswith(DECISION_PREFIX) else ref


def _skipped_option(index: int, decision: Mapping[str, Any]) -> Option:
    """A skipped decision's entry: greyed, never highlighted (it selects nothing)."""
    return Option(skipped_prompt(decision), id=f"{DECISION_PREFIX}{index}", disabled=True)
