"""Messages that carry engine results from thread workers back to the screens.

A worker reads the store on its own thread and posts exactly one of these; only the `@on`
handler that receives it, on the UI thread, changes widgets (STYLE.md example 3).
"""

from __future__ import annotations

from textual.message import Message

from core.engine import TaskSummary
from core.models import ChangedFile, Checkpoint, Task


class TasksLoaded(Message):
    """Every task with its checkpoint count, as the dashboard lists them."""

    def __init__(self, summaries: list[TaskSummary]) -> None:
        super().__init__()
        self.summaries = summaries


class CheckpointsLoaded(Message):
    """One task and its checkpoints (oldest first, without manifests)."""

    def __init__(self, task: Task, checkpoints: list[Checkpoint]) -> None:
        super().__init__()
        self.task = task
        self.checkpoints = checkpoints


class CheckpointLoaded(Message):
    """One checkpoint with its manifest, for the overview."""

    def __init__(self, checkpoint: Checkpoint) -> None:
        super().__init__()
        self.checkpoint = checkpoint


class DiffLoaded(Message):
    """A checkpoint's changed files and unified diff against its base or the previous one."""

    def __init__(self, ref: str, against: str, files: list[ChangedFile], diff: str) -> None:
        super().__init__()
        self.ref = ref
        self.against = against
        self.files = files
        self.diff = diff


class LoadFailed(Message):
    """A read the user asked for failed with a message they can act on."""

    def __init__(self, what: str, message: str, ref: str | None = None) -> None:
        super().__init__()
        self.what = what
        self.message = message
        self.ref = ref
