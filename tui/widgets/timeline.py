"""The task screen's checkpoint timeline: newest first, incomplete ones marked and explained."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option, OptionDoesNotExist

from core import clock
from core.models import Checkpoint, CheckpointState
from tui.widgets.formatting import CHECKPOINT_GLYPHS, counted, human_bytes, shown, truncate

NOTE_WIDTH = 29


def checkpoint_prompt(checkpoint: Checkpoint) -> Content:
    """Three lines: number, reason and age; state, bytes and files; the note or the failure."""
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
    return Content.from_markup("\n".join(line for line in (first, second, third) if line))


class CheckpointTimeline(OptionList):
    """One option per checkpoint, id `TASK@SEQ`; highlighting one selects it for the tabs."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Next", show=False, id="timeline.down"),
        Binding("k", "cursor_up", "Previous", show=False, id="timeline.up"),
    ]

    def show(self, checkpoints: Sequence[Checkpoint], select: str | None = None) -> None:
        """List `checkpoints` newest first and highlight `select` (default: the newest complete)."""
        newest_first = sorted(checkpoints, key=lambda c: c.seq, reverse=True)
        self.clear_options()
        self.add_options(Option(checkpoint_prompt(c), id=c.ref) for c in newest_first)
        if not newest_first:
            return
        if select is None:
            complete = [c for c in newest_first if c.state is CheckpointState.COMPLETE]
            select = (complete[0] if complete else newest_first[0]).ref
        try:
            self.highlighted = self.get_option_index(select)
        except OptionDoesNotExist:  # `select` is gone: fall back to the newest
            self.highlighted = 0

    @property
    def selected_ref(self) -> str | None:
        """The highlighted checkpoint's `TASK@SEQ`."""
        if self.highlighted is None:
            return None
        return self.get_option_at_index(self.highlighted).id
