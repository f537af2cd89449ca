"""The use-cases: the one API the CLI, the dashboard, harness hooks and Python callers share.

`Engine` is a `Session` (one store opened for one thread) that carries every use-case as a
method. Each use-case lives in its own module below and takes the session as its first
argument, DVC-style, so the facade stays short and a newcomer finds a use-case by its file
name: `tasks`, `checkpoint` (taking one), `checkpoints` (reading them), `evidence`, `effects`,
`approvals`, `validate`, `resume`, `drill`, `sharing`, `harness_sessions`, `measures`, `gc`
(`retention` holds its rules), `audit`, `store_info`. Three small modules serve several of them:
`writers` (the per-task checkpoint lock), `ledgers` (the effect ledger and approval book of a
session) and `leases` (who may resume a task now).

An `Engine` owns one SQLite connection and must stay on the thread that opened it; a worker
thread opens its own with `Engine.for_thread()`. Every state change runs inside `write_txn()`
together with its audit event, so the CLI, the TUI and hooks leave the same trail.
"""

from __future__ import annotations

import importlib

from core.session import Session

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any


class _Later:
    """An `Engine` method defined in a use-case module, imported the first time it is looked
    up and then bound to the class like any method: a hook that only records evidence never
    loads validation, resume or sharing (issue 22: commands load only what they use)."""

    def __init__(self, module: str, function: str | None = None, *, static: bool = False):
        self.module = module
        self.function = function
        self.static = static
        self.attribute = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = name

    def __get__(self, instance: object, owner: type) -> Any:
        module = importlib.import_module(f"core.engine.{self.module}")
        function = getattr(module, self.function or self.attribute)
        setattr(owner, self.attribute, staticmethod(function) if self.static else function)
        return getattr(owner if instance is None else instance, self.attribute)


def later(module: str, function: str | None = None, *, static: bool = False) -> Any:
    """The method `function` (default: the attribute's own name) of `core.engine.<module>`."""
    return _Later(module, function, static=static)


class _Module:
    """What the class body below reads `tasks.start_task` from at run time: each attribute a
    `_Later` of that name (type checkers see the real modules)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, function: str) -> _Later:
        return _Later(self.name, function)


__all__ = [
    "CHECKPOINT_REF",
    "Attention",
    "CheckpointRequest",
    "CheckpointResult",
    "Engine",
    "TaskSummary",
    "generate_task_id",
    "parse_checkpoint_ref",
]


if TYPE_CHECKING:  # at run time each use-case module loads when one of its methods is first used
    import os

    from core.engine import approval_context as approval_contexts
    from core.engine import (
        approvals,
        audit,
        checkpoints,
        devices,
        effects,
        evidence,
        harness_sessions,
        measures,
        pays,
        sharing,
        store_info,
        tasks,
        trust,
    )
    from core.engine import checkpoint as checkpointing
    from core.engine import drill as drilling
    from core.engine import drill_fleet as fleet_drills
    from core.engine import resume as resuming
    from core.engine import validate as validation
    from core.engine.attention import Attention
    from core.engine.checkpoint import CheckpointRequest, CheckpointResult
    from core.engine.checkpoints import CHECKPOINT_REF, parse_checkpoint_ref
    from core.engine.doctor import DoctorReport
    from core.engine.gc import GcReport
    from core.engine.tasks import TaskSummary, generate_task_id
    from core.models import Interface
else:
    approvals, audit, checkpoints, effects, evidence, harness_sessions, measures = (
        _Module(name)
        for name in (
            "approvals",
            "audit",
            "checkpoints",
            "effects",
            "evidence",
            "harness_sessions",
            "measures",
        )
    )
    sharing, store_info, tasks, trust, devices, approval_contexts, pays = (
        _Module(name)
        for name in (
            "sharing",
            "store_info",
            "tasks",
            "trust",
            "devices",
            "approval_context",
            "pays",
        )
    )
    checkpointing, resuming, validation, drilling, fleet_drills = (
        _Module(name) for name in ("checkpoint", "resume", "validate", "drill", "drill_fleet")
    )

_EXPORTS = {
    "Attention": "attention",
    "CHECKPOINT_REF": "checkpoints",
    "CheckpointRequest": "checkpoint",
    "CheckpointResult": "checkpoint",
    "TaskSummary": "tasks",
    "generate_task_id": "tasks",
    "parse_checkpoint_ref": "checkpoints",
}
"""The names this package re-exports, and the use-case module each comes from. None may be
named like its module (`attention`): importing the submodule sets that name on the package,
and the re-export would then be the module (import `core.engine.attention.attention`)."""


def __getattr__(name: str) -> Any:
    """A re-exported name, its module imported on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'core.engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"core.engine.{module}"), name)
    globals()[name] = value
    return value


class Engine(Session):
    """One store, opened for one thread, with every use-case as a method."""

    def for_thread(self) -> Engine:
        """A new engine on the same store for use on another thread."""
        return Engine(
            self.paths.root, interface=self.interface, actor=self.actor, config=self.config
        )

    @property
    def session(self) -> Session:
        """The engine is its own session: what the capabilities below the engine take."""
        return self

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the store ---------------------------------------------------------------------------
    watch_commits = store_info.watch_commits
    locate = store_info.locate

    # --- tasks -------------------------------------------------------------------------------
    start_task = tasks.start_task
    task_recipients = tasks.task_recipients
    share_task = tasks.share_task
    unshare_task = tasks.unshare_task
    get_task = tasks.get_task
    list_tasks = tasks.list_tasks
    task_summaries = tasks.task_summaries
    first_task_summaries = tasks.first_task_summaries
    task_status_counts = tasks.task_status_counts
    finish_task = tasks.finish_task
    set_task_activity = tasks.set_task_activity

    # --- sharing (core.sharing, core.ledger.facts: imported on use) ----------------------------
    remote_recipients = sharing.remote_recipients
    adopt_task = sharing.adopt_task
    rotate_task_key = sharing.rotate_task_key
    push = sharing.push
    fetch = sharing.fetch
    list_remote = sharing.list_remote
    sync = sharing.sync
    add_remote = sharing.add_remote
    remove_remote = sharing.remove_remote
    remotes = sharing.named_remotes
    remote_links = sharing.remote_links
    remote_only_tasks = sharing.remote_only_tasks
    export_ledger = sharing.export_ledger
    apply_ledger = sharing.apply_ledger
    ledger_conflicts = sharing.ledger_conflicts
    roster = trust.roster
    rejected_facts = trust.rejected_facts
    rejected_counts = trust.rejected_counts
    set_approvers = trust.set_approvers
    signing_identity = (
        staticmethod(trust.signing_identity)
        if TYPE_CHECKING
        else later("trust", "signing_identity", static=True)
    )

    # --- economics, retention and measures ---------------------------------------------------
    estimate = measures.estimate
    metrics = measures.metrics

    def gc(self, *, dry_run: bool = False) -> GcReport:
        """Expire checkpoints by the retention policy (see `core.engine.retention`); audited."""
        from core.engine import gc as garbage  # off the hooks' path: dataclasses and git

        return garbage.gc(self, dry_run=dry_run)

    @staticmethod
    def doctor(
        store_root: str | os.PathLike[str] | None = None,
        *,
        fix: bool = False,
        interface: Interface | None = None,
    ) -> DoctorReport:
        """Check the store (and, with `fix`, mend it, audited); see `core.engine.doctor`.

        Static: it must run where opening an `Engine` fails (a deleted migration row)."""
        from core.engine import doctor as checkup
        from core.models import Interface

        return checkup.doctor(store_root, fix=fix, interface=interface or Interface.API)

    # --- checkpoints -------------------------------------------------------------------------
    checkpoint = checkpointing.checkpoint
    checkpoint_verdict = pays.checkpoint_verdict
    minutes_until_it_pays = pays.minutes_until_it_pays
    decide_checkpoint = pays.decide_checkpoint
    record_decision = pays.record_decision
    record_usage = pays.record_usage
    checkpoint_decisions = pays.decisions
    set_task_policy = pays.set_task_policy
    milestone_if_it_pays = pays.milestone_if_it_pays
    list_checkpoints = checkpoints.list_checkpoints
    get_checkpoint = checkpoints.get_checkpoint
    verify = checkpoints.verify
    diff = checkpoints.diff
    changed_files = checkpoints.changed_files
    checkout = checkpoints.checkout

    # --- evidence ----------------------------------------------------------------------------
    run_command = evidence.run_command
    add_evidence_file = evidence.add_evidence_file
    add_evidence_output = evidence.add_evidence_output
    list_evidence = evidence.list_evidence
    get_evidence = evidence.get_evidence
    evidence_output = evidence.evidence_output
    evidence_last_lines = evidence.evidence_last_lines
    evidence_chunk_index = evidence.evidence_chunk_index
    evidence_chunk = evidence.evidence_chunk

    # --- side effects and approvals ----------------------------------------------------------
    propose_effect = effects.propose_effect
    move_effect = effects.move_effect
    get_effect = effects.get_effect
    list_effects = effects.list_effects
    unsettled_effects = effects.unsettled_effects
    check_effect = effects.check_effect
    run_effect_check = effects.run_effect_check
    guard_effect = effects.guard_effect
    note_background = effects.note_background
    has_effects_in = effects.has_effects_in
    background_effects = effects.background_effects
    request_approval = approvals.request_approval
    decide_approval = approvals.decide_approval
    get_approval = approvals.get_approval
    list_approvals = approvals.list_approvals
    recently_decided_approvals = approvals.recently_decided_approvals
    pending_approvals = approvals.pending_approvals
    wait_for_decision = approvals.wait_for_decision
    approval_context = approval_contexts.approval_context
    held_prompts = approval_contexts.held_prompts

    # --- validation and resume ---------------------------------------------------------------
    validate = validation.validate
    stored_validation = validation.stored_validation
    resume = resuming.resume
    launch = resuming.launch
    judge_resume = resuming.judge_resume
    resume_records = resuming.resume_records
    clean_failed_resume = resuming.clean_failed_resume

    # --- restore drills ----------------------------------------------------------------------
    drill = drilling.drill
    list_drills = drilling.list_drills
    drill_all = fleet_drills.drill_all
    drill_sample = fleet_drills.sample

    # --- harness sessions (hooks) ------------------------------------------------------------
    session_task = harness_sessions.session_task
    link_harness_session = (
        harness_sessions.link_harness_session if TYPE_CHECKING else later("harness_sessions")
    )
    harness_session = (
        harness_sessions.harness_session if TYPE_CHECKING else later("harness_sessions")
    )
    free_task_on_repo = (
        harness_sessions.free_task_on_repo if TYPE_CHECKING else later("harness_sessions")
    )

    # --- paired devices of the web inbox (`pitstop serve`) -----------------------------------
    create_pairing = devices.create_pairing
    redeem_pairing = devices.redeem_pairing
    device_for_token = devices.device_for_token
    list_devices = devices.list_devices
    revoke_device = devices.revoke_device

    # --- audit -------------------------------------------------------------------------------
    events = audit.events


if not TYPE_CHECKING:
    # The stand-ins served the class body only: `from core.engine import tasks` must find the
    # real module (imported then), not a stand-in.
    del approvals, audit, checkpoints, effects, evidence, harness_sessions, measures
    del sharing, store_info, tasks, trust, checkpointing, resuming, validation, drilling
    del fleet_drills
    del devices, approval_contexts, pays
