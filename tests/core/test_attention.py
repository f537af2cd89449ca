"""The attention score: what needs a person first, whatever the task's status.

The score's promise is monotonic: something more that needs a person never lowers it. Hypothesis
checks that over arbitrary summaries; the rollup tests check the facts it weighs come out of
real writes (an approval decided, an effect settled, a new checkpoint mark a verdict out of date).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from core import clock
from core.engine import CheckpointRequest, Engine, TaskSummary
from core.engine.attention import attention
from core.models import Budget, EffectState, Risk, Task, TaskStatus
from core.store import TriageFacts

NOW = clock.parse("2026-11-20T12:00:00.000000Z")
TIMES = st.integers(min_value=0, max_value=96 * 60).map(
    lambda minutes: clock.to_iso(NOW - timedelta(minutes=minutes))
)
VERDICTS = st.sampled_from(
    [None, "ready", "ready_with_warnings", "stale", "blocked", "unsupported"]
)


@st.composite
def summaries(draw: st.DrawFn) -> TaskSummary:
    status = draw(st.sampled_from(list(TaskStatus)))
    budget = Budget(usd=draw(st.sampled_from([None, 10.0])))
    task = Task(
        "t", "/r", "/s.git", "o", status, "2026-11-01T00:00:00.000000Z", clock.to_iso(NOW),
        budget=budget, usd_used=draw(st.floats(min_value=0, max_value=30)),
    )  # fmt: skip
    high = draw(st.integers(0, 3))
    medium = draw(st.integers(0, 3))
    low = draw(st.integers(0, 3))
    pending = high + medium + low
    facts = TriageFacts(
        pending_high=high,
        pending_medium=medium,
        oldest_pending_at=draw(TIMES) if pending else None,
        in_progress_effects=draw(st.integers(0, 2)),
        verdict_outdated=draw(st.booleans()),
    )
    return TaskSummary(
        task,
        checkpoint_count=draw(st.integers(0, 5)),
        last_checkpoint_at=draw(st.none() | TIMES),
        pending_approvals=pending,
        uncertain_effects=draw(st.integers(0, 3)),
        last_verdict=draw(VERDICTS),
        triage=facts,
    )


def with_high_risk_approval(summary: TaskSummary, requested_at: str) -> TaskSummary:
    """The same task after an agent asked for one more high-risk decision (which also puts any
    verdict out of date: it was reached with one approval fewer pending)."""
    facts = summary.triage
    oldest = min(filter(None, (facts.oldest_pending_at, requested_at)))
    return summary._replace(
        pending_approvals=summary.pending_approvals + 1,
        triage=facts._replace(
            pending_high=facts.pending_high + 1,
            oldest_pending_at=oldest,
            verdict_outdated=facts.verdict_outdated or summary.last_verdict is not None,
        ),
    )


@given(summaries(), TIMES)
def test_a_pending_high_risk_approval_never_lowers_the_score(
    summary: TaskSummary, requested_at: str
) -> None:
    before = attention(summary, NOW)
    after = attention(with_high_risk_approval(summary, requested_at), NOW)
    assert after.score >= before.score
    if not summary.task.status.is_final:
        assert after.score > before.score and after.needs_person


@given(summaries())
def test_an_uncertain_effect_never_lowers_the_score(summary: TaskSummary) -> None:
    more = summary._replace(uncertain_effects=summary.uncertain_effects + 1)
    assert attention(more, NOW).score >= attention(summary, NOW).score


@given(summaries())
def test_a_finished_task_needs_nobody_and_reasons_come_weightiest_first(
    summary: TaskSummary,
) -> None:
    result = attention(summary, NOW)
    if summary.task.status.is_final:
        assert result.score == 0 and not result.reasons
    assert result.needs_person == bool(result.reasons)


def test_a_running_task_with_an_uncertain_deploy_outranks_a_paused_task_with_nothing() -> None:
    base = Task("t", "/r", "/s.git", "o", TaskStatus.PAUSED, clock.to_iso(NOW), clock.to_iso(NOW))
    idle = TaskSummary(base, 1, clock.to_iso(NOW))
    deploy = TaskSummary(
        base._replace(id="d", status=TaskStatus.RUNNING),
        1,
        clock.to_iso(NOW),
        uncertain_effects=1,
        last_verdict="blocked",
    )
    assert attention(deploy, NOW).score > attention(idle, NOW).score
    assert not attention(idle, NOW).needs_person
    assert attention(deploy, NOW).reasons == ("1 uncertain effect to settle", "verdict blocked")


def test_a_minutes_budget_spent_counts_as_over_budget() -> None:
    task = Task(
        "t", "/r", "/s.git", "o", TaskStatus.PAUSED, "2026-11-20T10:00:00.000000Z",
        clock.to_iso(NOW), budget=Budget(minutes=90),
    )  # fmt: skip
    summary = TaskSummary(task, 1, "2026-11-20T12:00:00.000000Z")  # 120 of 90 minutes
    assert "over budget (133%)" in attention(summary, NOW).reasons


def summary_of(engine: Engine, task_id: str) -> TaskSummary:
    everything = {s.task.id: s for s in engine.task_summaries()}
    first = {s.task.id: s for s in engine.first_task_summaries(50, tuple(TaskStatus))}
    assert first[task_id] == everything[task_id]  # both statements weigh the same facts
    return everything[task_id]


def test_the_rollup_weighs_risk_and_age(engine: Engine, repo: Path) -> None:
    task_id = engine.start_task(repo=repo, objective="attention", task_id="att").id
    engine.propose_effect(task_id, "deploy", "deploy", check="exit 2")
    engine.move_effect(task_id, "deploy", EffectState.IN_PROGRESS)
    high = engine.request_approval(task_id, "deploy to production", risk=Risk.HIGH)
    engine.request_approval(task_id, "post a comment", risk=Risk.LOW)
    summary = summary_of(engine, task_id)
    facts = summary.triage
    assert (facts.pending_high, facts.pending_medium, facts.in_progress_effects) == (1, 0, 1)
    assert facts.oldest_pending_at == high.requested_at
    assert facts.validated_at is None and not facts.verdict_outdated
    assert attention(summary).reasons[:2] == (
        "1 high-risk approval pending",
        "1 effect in progress, nobody running",  # the task waits on its approvals
    )


def test_a_verdict_is_out_of_date_once_a_decision_a_settlement_or_a_checkpoint_follows(
    engine: Engine, repo: Path
) -> None:
    task_id = engine.start_task(repo=repo, objective="signals", task_id="sig").id
    (repo / "README.md").write_text("# changed\n")
    engine.checkpoint(task_id, CheckpointRequest(note="first"))
    approval = engine.request_approval(task_id, "deploy", risk=Risk.HIGH)
    engine.propose_effect(task_id, "push", "git", check="exit 2")
    engine.move_effect(task_id, "push", EffectState.IN_PROGRESS)
    engine.move_effect(task_id, "push", EffectState.UNCERTAIN)

    def validated() -> TaskSummary:
        report = engine.validate(f"{task_id}@1", offline=True)
        summary = summary_of(engine, task_id)
        assert summary.last_verdict == report.verdict.value and summary.triage.validated_at
        assert not summary.triage.verdict_outdated
        return summary

    assert validated().last_verdict == "blocked"
    engine.decide_approval(approval.id, True, "window open")
    assert summary_of(engine, task_id).triage.verdict_outdated
    validated()
    engine.move_effect(task_id, "push", EffectState.CONFIRMED, reason="the tag is on origin")
    assert summary_of(engine, task_id).triage.verdict_outdated
    validated()
    (repo / "README.md").write_text("# changed again\n")
    engine.checkpoint(task_id, CheckpointRequest(note="second"))
    outdated = summary_of(engine, task_id)
    assert outdated.triage.verdict_outdated
    assert "verdict out of date: validate again" in attention(outdated).reasons
