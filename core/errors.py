"""Errors people read: each carries one line saying what happened and what to do, and an exit code.

The CLI prints `message` on one line of stderr and exits with `exit_code`; nothing else is shown,
so a message must stand on its own.
"""

from __future__ import annotations

EXIT_FAILURE = 1
EXIT_USAGE = 2


class PitstopError(Exception):
    """A failure a user can act on; never a programming error."""

    exit_code = EXIT_FAILURE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(PitstopError):
    """The request itself is malformed: a bad option value, an impossible combination."""

    exit_code = EXIT_USAGE


class NotFoundError(PitstopError):
    """An id, task or checkpoint that the store does not know."""

    exit_code = EXIT_USAGE


class NotAGitRepoError(PitstopError):
    """The path given as a task's repository is not inside a git work tree."""

    exit_code = EXIT_USAGE


class StoreError(PitstopError):
    """The store cannot be opened or used (permissions, corruption, a newer schema)."""


class SchemaTooNewError(StoreError):
    """The database or a record was written by a newer Pitstop than this one."""


class DamagedCheckpointError(PitstopError):
    """A checkpoint's stored parts are missing or do not match their recorded hashes."""


class GitError(PitstopError):
    """A git command failed in a way Pitstop could not recover from."""


class DamagedObjectError(GitError):
    """git announced an object of a store repository and could not inflate it (exit code 1)."""


class ConflictError(PitstopError):
    """The request conflicts with the current state (a finished task, a duplicate id)."""


EXIT_NEEDS_SETTLING = 3
EXIT_NEEDS_APPROVAL = 4
EXIT_BUSY = 5


class NotAllowedError(PitstopError):
    """The operator is not among those allowed to decide for this task."""


class NeedsSettlingError(PitstopError):
    """A side effect's outcome is unknown; an operator (or a precondition check) must settle it."""

    exit_code = EXIT_NEEDS_SETTLING


class ForeignCheckError(NeedsSettlingError):
    """A precondition check another store wrote, not run before an operator has seen it."""


class ApprovalRequiredError(PitstopError):
    """A side effect may run only after an approver said yes."""

    exit_code = EXIT_NEEDS_APPROVAL


class EffectBusyError(PitstopError):
    """Another guard is running this side effect right now."""

    exit_code = EXIT_BUSY


class ResumeRefusedError(PitstopError):
    """Validation did not allow the resume; the exit code is the verdict's (3, 4 or 5)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class CommandStartError(UsageError):
    """A command to run or guard could not be started (not found, not executable)."""


class MasterKeyError(PitstopError):
    """The master key is missing, malformed, or not the one the data was encrypted with."""


class DiskFullError(StoreError):
    """The disk holding the store is full: what could be kept is kept, and said."""
