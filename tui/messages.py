"""Messages that carry engine results from thread workers back to the screens.

A worker reads the store on its own thread and posts exactly one of these; only the `@on`
handler that receives it, on the UI thread, changes widgets (STYLE.md example 3).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.message import Message

from core.engine import TaskSummary
from core.models import Approval, ChangedFile, Checkpoint, SideEffect, Task, TaskStatus
from core.restore.resume import ResumePlan
from core.restore.validate import Finding, ValidationReport
from tui.remotes import RemoteOutcome, RemoteView

if TYPE_CHECKING:  # evidence pulls in zstd and the redactor; only its type is needed here
    from collections.abc import Mapping, Sequence

    from core.engine.validate import StoredValidation
    from core.evidence.storage import Evidence
    from core.ledger.moves import CheckOutcome
    from tui.drill_runner import DrillOutcome


class TasksLoaded(Message):
    """Every task with its checkpoint count, as the dashboard lists them.

    With `status_counts`, only the first screenful in triage order: the whole list follows, and
    the counts (tasks per status, store-wide) stand in for it in the summary bar meanwhile.
    """

    def __init__(
        self,
        summaries: list[TaskSummary],
        status_counts: dict[TaskStatus, int] | None = None,
        remote: RemoteView | None = None,
    ) -> None:
        super().__init__()
        self.summaries = summaries
        self.status_counts = status_counts
        self.remote = remote or RemoteView()


class RemoteProgress(Message):
    """A fetch or sync worker's current step, for the dashboard's status line."""

    bubble = False  # for the dashboard alone

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class RemoteFinished(Message):
    """A fetch or sync ended: what it did, or the one-line error that stopped it."""

    bubble = False  # for the dashboard alone

    def __init__(self, outcome: RemoteOutcome | None, error: str | None = None) -> None:
        super().__init__()
        self.outcome = outcome
        self.error = error


class CheckpointsLoaded(Message):
    """One task and its checkpoints (oldest first, without manifests), and its automatic
    checkpoint decisions (oldest first, `Engine.checkpoint_decisions`)."""

    def __init__(
        self,
        task: Task,
        checkpoints: list[Checkpoint],
        decisions: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        super().__init__()
        self.task = task
        self.checkpoints = checkpoints
        self.decisions = decisions


class TrustLoaded(Message):
    """A task's roster (None: it has none) and how many facts from elsewhere were refused."""

    def __init__(
        self, task_id: str, roster: dict[str, Any] | None, refused: int, shared: bool
    ) -> None:
        super().__init__()
        self.task_id = task_id
        self.roster = roster
        self.refused = refused
        self.shared = shared


class CheckpointLoaded(Message):
    """One checkpoint with its manifest, for the overview."""

    def __init__(self, checkpoint: Checkpoint, pays_line: str | None = None) -> None:
        super().__init__()
        self.checkpoint = checkpoint
        self.pays_line = pays_line  # the newest checkpoint of a live task: when the next pays


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


# --- the task screen's evidence, side-effect, approval, validation and resume tabs ------------


class EvidenceListed(Message):
    """The evidence items recorded up to checkpoint `ref` (oldest first, without secrets)."""

    def __init__(self, ref: str, items: list[Evidence]) -> None:
        super().__init__()
        self.ref = ref
        self.items = items


class EvidenceLoaded(Message):
    """One evidence item with its command decrypted, and the last lines of its output."""

    def __init__(self, item: Evidence, tail: list[str]) -> None:
        super().__init__()
        self.item = item
        self.tail = tail


class EvidenceIndexLoaded(Message):
    """Where an evidence item's stored chunks sit in its output: enough to scroll it lazily."""

    def __init__(self, evidence_id: int, chunks: list[dict[str, Any]]) -> None:
        super().__init__()
        self.evidence_id = evidence_id
        self.chunks = chunks


class EvidenceChunkLoaded(Message):
    """One decrypted, decompressed chunk of an evidence item's output."""

    def __init__(self, evidence_id: int, seq: int, data: bytes) -> None:
        super().__init__()
        self.evidence_id = evidence_id
        self.seq = seq
        self.data = data


class EffectsLoaded(Message):
    """A task's side effects, in the order they were proposed."""

    def __init__(
        self,
        task_id: str,
        effects: list[SideEffect],
        conflicts: dict[str, list[str]] | None = None,
    ) -> None:
        super().__init__()
        self.task_id = task_id
        self.effects = effects
        # Per effect key: settlements a ledger sync set aside (settled differently elsewhere).
        self.conflicts = conflicts or {}


class EffectChecked(Message):
    """A precondition check the operator ran from the dashboard, and what it settled (if any)."""

    def __init__(self, outcome: CheckOutcome) -> None:
        super().__init__()
        self.outcome = outcome


class ApprovalsLoaded(Message):
    """A task's approvals, oldest first."""

    def __init__(
        self,
        task_id: str,
        approvals: list[Approval],
        conflicts: dict[str, list[str]] | None = None,
    ) -> None:
        super().__init__()
        self.task_id = task_id
        self.approvals = approvals
        # Per approval id: decisions a ledger sync set aside (decided differently elsewhere).
        self.conflicts = conflicts or {}


class ActionDone(Message):
    """A write the user asked for finished: `message` says what happened (or why it failed)."""

    def __init__(self, what: str, message: str, *, ok: bool = True) -> None:
        super().__init__()
        self.what = what
        self.message = message
        self.ok = ok


class ValidationProgress(Message):
    """Findings of a running validation so far; a burst of these coalesces into the newest."""

    def __init__(self, ref: str, findings: tuple[Finding, ...]) -> None:
        super().__init__()
        self.ref = ref
        self.findings = findings

    def can_replace(self, message: Message) -> bool:
        """A newer progress message for the same run carries every finding of the older one."""
        return isinstance(message, ValidationProgress) and message.ref == self.ref


class DrillProgress(Message):
    """A drill from the dashboard is running: seconds spent and the replay's last line."""

    def __init__(self, ref: str, seconds: float, last_line: str) -> None:
        super().__init__()
        self.ref = ref
        self.seconds = seconds
        self.last_line = last_line

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, DrillProgress) and message.ref == self.ref


class DrillFinished(Message):
    """A drill from the dashboard ended: its outcome (report, error or cancelled)."""

    def __init__(self, ref: str, outcome: DrillOutcome) -> None:
        super().__init__()
        self.ref = ref
        self.outcome = outcome


class StoredValidationLoaded(Message):
    """The newest validation kept for a checkpoint (None: never validated), read on opening."""

    def __init__(self, ref: str, stored: StoredValidation | None) -> None:
        super().__init__()
        self.ref = ref
        self.stored = stored


class ValidationFinished(Message):
    """A validation run finished and was stored: its report, or why it could not run."""

    def __init__(self, ref: str, report: ValidationReport | None, error: str | None = None) -> None:
        super().__init__()
        self.ref = ref
        self.report = report
        self.error = error


class ResumePrepared(Message):
    """A resume holds its lease and has its worktree and brief: ready to launch."""

    def __init__(self, plan: ResumePlan, brief: str) -> None:
        super().__init__()
        self.plan = plan
        self.brief = brief


# --- the approvals inbox -------------------------------------------------------------------


class LogSearched(Message):
    """The lines of an evidence item's full log that hold the searched words."""

    def __init__(self, evidence_id: int, needle: str, lines: list[int]) -> None:
        super().__init__()
        self.evidence_id = evidence_id
        self.needle = needle
        self.lines = lines


class InboxLoaded(Message):
    """Every pending approval of a live task, and (when read) those decided lately."""

    def __init__(self, approvals: list[Approval], decided: list[Approval] | None = None) -> None:
        super().__init__()
        self.approvals = approvals
        self.decided = decided


class DecisionRecorded(Message):
    """A decision the user made in the inbox was stored (`approval`) or refused (`error`)."""

    def __init__(self, approval_id: str, approval: Approval | None, error: str | None) -> None:
        super().__init__()
        self.approval_id = approval_id
        self.approval = approval
        self.error = error
