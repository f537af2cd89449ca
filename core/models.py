"""The shared vocabulary: immutable records and enums every other module speaks.

Nothing here touches SQLite or git; `core.store` and `core.snapshot` translate to and from these.
Records are `NamedTuple`s, not dataclasses: a harness hook imports this module on every
tool call, and `dataclasses` (which imports `inspect`) plus generating each class's methods cost
about as much as Python's own start-up. A changed copy is `record._replace(field=value)`. They
are built by `core.records.NamedTuple` (what `typing.NamedTuple` builds, without loading
`typing`, which is ~3 ms of start-up; issue 22), which keeps string annotations as written.
"""

from __future__ import annotations

import re
from enum import StrEnum

from core.errors import UsageError

TYPE_CHECKING = False  # `typing` is for type checkers only
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple


class TaskStatus(StrEnum):
    """Where a task stands; `done`, `cancelled` and `expired` are final."""

    RUNNING = "running"
    PAUSED = "paused"
    WAITING = "waiting"
    RESUMING = "resuming"
    DONE = "done"
    CANCELLED = "cancelled"
    EXPIRED = "expired"

    @property
    def is_final(self) -> bool:
        return self in (TaskStatus.DONE, TaskStatus.CANCELLED, TaskStatus.EXPIRED)


class CheckpointState(StrEnum):
    """`writing` while parts are stored; `complete` only after they verified; else `incomplete`."""

    WRITING = "writing"
    COMPLETE = "complete"
    INCOMPLETE = "incomplete"
    EXPIRED = "expired"  # retired by `pitstop gc` (core.engine.retention); never resumable again


class CheckpointReason(StrEnum):
    """Why a checkpoint was taken; it decides what the task's status becomes."""

    MILESTONE = "milestone"
    BEFORE_WAIT = "before-wait"
    MANUAL = "manual"
    INTERRUPT = "interrupt"
    TURN = "turn"  # an every-turn hook; skipped below the policy's minimum interval


class Interface(StrEnum):
    """Which door a state change came through, for the audit log."""

    CLI = "cli"
    TUI = "tui"
    HOOK = "hook"
    API = "api"
    SYNC = "sync"  # a change brought in from another store's ledger (core.ledger.facts)
    WEB = "web"  # a paired device through `pitstop serve` (the device id is in the detail)


# A pattern, not compiled here: `re` compiles (and caches) it when a task id is first checked,
# which the commands that only read never do.
TASK_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,39}$"


def validate_task_id(task_id: str) -> str:
    """Return `task_id` if it is short, lowercase and safe inside a git ref name, else refuse it."""
    shaped = re.match(TASK_ID_PATTERN, task_id)
    if not shaped or ".." in task_id or task_id.endswith((".", ".lock")):
        raise UsageError(
            f"invalid task id {task_id!r}: use 1-40 lowercase letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return task_id


class NamedVersion(NamedTuple):
    """A harness or model as `NAME@VERSION` (the version may be unknown)."""

    name: str
    version: str | None = None

    @classmethod
    def parse(cls, text: str, what: str) -> NamedVersion:
        """Parse `NAME@VERSION` or `NAME`; `what` names the option in the error."""
        name, _, version = text.strip().partition("@")
        if not name or (_ and not version):
            raise UsageError(f"invalid {what} {text!r}: expected NAME or NAME@VERSION")
        return cls(name=name, version=version or None)

    def __str__(self) -> str:
        return f"{self.name}@{self.version}" if self.version else self.name


class Budget(NamedTuple):
    """Limits a task may spend; `None` means no limit was set."""

    tokens: int | None = None
    usd: float | None = None
    minutes: float | None = None


class Task(NamedTuple):
    """One long piece of agent work in one git repository."""

    id: str
    repo_root: str
    store_repo: str
    objective: str
    status: TaskStatus
    created_at: str
    updated_at: str
    harness: NamedVersion | None = None
    model: NamedVersion | None = None
    budget: Budget = Budget()
    tokens_used: int = 0
    usd_used: float = 0.0
    credentials: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()


class LeftOut(NamedTuple):
    """A file the snapshot deliberately did not store, and why."""

    path: str
    reason: str
    size: int | None = None


class ChangedFile(NamedTuple):
    """One path that differs between the base commit and the snapshot."""

    path: str
    status: str
    added: int | None
    deleted: int | None
    old_path: str | None = None

    @property
    def is_binary(self) -> bool:
        return self.added is None


class Checkpoint(NamedTuple):
    """An immutable record of a task at one moment; resumable only when `complete`."""

    task_id: str
    seq: int
    state: CheckpointState
    reason: CheckpointReason
    created_at: str
    note: str | None = None
    commit: str | None = None
    worktree_tree: str | None = None
    index_tree: str | None = None
    base_commit: str | None = None
    branch: str | None = None
    completed_at: str | None = None
    creation_ms: int | None = None
    bytes_added: int | None = None
    changed_count: int = 0
    left_out_count: int = 0
    failure: str | None = None
    manifest_sha256: str | None = None
    manifest: dict[str, Any] | None = None
    # Content as stored (encrypted envelopes); the engine opens them into `note`/`manifest`.
    sealed_note: bytes | None = None
    sealed_manifest: bytes | None = None

    @property
    def ref(self) -> str:
        """The checkpoint's human handle, `TASK@SEQ`."""
        return f"{self.task_id}@{self.seq}"

    def __repr__(self) -> str:  # the sealed envelopes are noise in a log or a test failure
        shown = ", ".join(
            f"{name}={getattr(self, name)!r}"
            for name in self._fields
            if name not in ("sealed_note", "sealed_manifest")
        )
        return f"Checkpoint({shown})"


class AuditEvent(NamedTuple):
    """One state change: who, when, through which interface, from what to what, and why."""

    id: int
    at: str
    actor: str
    interface: Interface
    task_id: str | None
    entity: str
    entity_id: str
    action: str
    from_state: str | None
    to_state: str | None
    reason: str | None


class EffectState(StrEnum):
    """Where a side effect stands; `confirmed` is final, `failed` may be retried under its key."""

    PROPOSED = "proposed"
    IN_PROGRESS = "in_progress"
    CONFIRMED = "confirmed"
    FAILED = "failed"
    UNCERTAIN = "uncertain"


class SideEffect(NamedTuple):
    """An action outside the sandbox, recorded under an idempotency key unique in its task."""

    task_id: str
    key: str
    kind: str
    state: EffectState
    created_at: str
    updated_at: str
    target: str | None = None
    check: str | None = None
    needs_approval: bool = False
    attempts: int = 0
    note: str | None = None
    exit_code: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    runner_pid: int | None = None
    runner_host: str | None = None
    runner_alive: bool = False
    check_foreign: bool = False  # the check came from another store: it runs once confirmed

    @property
    def needs_settling(self) -> bool:
        """True when nobody knows whether the action happened: it blocks resume."""
        return self.state is EffectState.UNCERTAIN or (
            self.state is EffectState.IN_PROGRESS and not self.runner_alive
        )


class ApprovalState(StrEnum):
    """An approval is `pending` until decided once, or until it expires."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"


class Risk(StrEnum):
    """How much an approver should worry about the requested action."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class Approval(NamedTuple):
    """An agent's request for a human decision before an action."""

    id: str
    task_id: str
    seq: int
    action: str
    risk: Risk
    state: ApprovalState
    requested_by: str
    requested_at: str
    effect_key: str | None = None
    expires_at: str | None = None
    decided_by: str | None = None
    decided_at: str | None = None
    reason: str | None = None
    checkpoint_seq: int | None = None


class Device(NamedTuple):
    """A browser paired with `pitstop serve`: it acts for one approver until revoked."""

    id: str
    approver: str
    label: str
    created_at: str
    last_seen_at: str | None = None
    revoked_at: str | None = None

    @property
    def active(self) -> bool:
        """True until the device is revoked."""
        return self.revoked_at is None
