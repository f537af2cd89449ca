"""The drill's pure parts: pytest's failing-test lines read back, and replays compared."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.drill.compare import DrillVerdict, Observed, differences, verdict_of
from core.drill.failing_tests import failing_test_id, failing_tests

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=12)
_PARAM = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_. ,=", min_size=0, max_size=12
).filter(lambda text: "]" not in text)


@st.composite
def pytest_ids(draw: st.DrawFn) -> str:
    path = "/".join(draw(st.lists(_WORD, min_size=1, max_size=3))) + ".py"
    names = draw(st.lists(_WORD, min_size=1, max_size=2))
    test_id = "::".join([path, *(f"test_{name}" for name in names)])
    if draw(st.booleans()):
        test_id += f"[{draw(_PARAM)}]"
    return test_id


@given(
    st.lists(pytest_ids(), max_size=8),
    st.lists(st.sampled_from(["short", "message", "verbose", "ansi", "error"]), min_size=8),
    st.integers(min_value=1, max_value=64),
)
def test_every_failing_test_line_is_read_back_whatever_the_blocks(
    ids: list[str], styles: list[str], block: int
) -> None:
    lines = ["============ short test summary info ============"]
    for test_id, style in zip(ids, styles, strict=False):
        lines.append(
            {
                "short": f"FAILED {test_id}",
                "message": f"FAILED {test_id} - assert 1 == 2 - and more",
                "verbose": f"{test_id} FAILED                     [ 50%]",
                "ansi": f"\x1b[31mFAILED\x1b[0m {test_id} - boom",
                "error": f"ERROR {test_id} - fixture 'db' not found",
            }[style]
        )
    lines += ["PASSED tests/test_ok.py::test_fine", "= 1 failed, 2 passed in 0.12s ="]
    output = ("\n".join(lines) + "\n").encode()
    blocks = [output[start : start + block] for start in range(0, len(output), block)]
    assert failing_tests(blocks) == frozenset(ids)


def test_lines_that_name_no_test_are_not_failures() -> None:
    for line in (
        "FAILED (failures=1)",
        "= 1 failed, 2 passed in 0.1s =",
        "tests/test_x.py::test_y PASSED",
        "FAILED",
        "ERROR: could not install",
    ):
        assert failing_test_id(line) is None, line
    assert failing_test_id("ERROR tests/test_x.py - ImportError: nope") == "tests/test_x.py"


def _run(exit_code: int, passed: int, failing: set[str]) -> Observed:
    counts = {"passed": passed, **({"failed": len(failing)} if failing else {}), "warnings": 3}
    return Observed(exit_code, False, {"tool": "pytest", "counts": counts}, frozenset(failing))


def test_the_same_outcome_is_faithful_whatever_the_warnings() -> None:
    recorded = _run(1, 2, {"t.py::test_a"})
    replayed = recorded._replace(summary={"tool": "pytest", "counts": {"passed": 2, "failed": 1}})
    assert differences(recorded, replayed) == []
    assert verdict_of([]) is DrillVerdict.FAITHFUL


def test_drift_says_which_tests_changed_both_ways() -> None:
    recorded = _run(1, 2, {"t.py::test_a"})
    replayed = _run(1, 1, {"t.py::test_b", "t.py::test_c"})
    found = differences(recorded, replayed)
    assert found == [
        "2 tests that passed now fail: t.py::test_b, t.py::test_c",
        "1 test that failed now passes: t.py::test_a",
        "the summary reads 'pytest: 1 passed, 2 failed', recorded 'pytest: 2 passed, 1 failed'",
    ]
    assert verdict_of(found) is DrillVerdict.DRIFTED


def test_unreadable_recorded_output_compares_status_and_summary_only() -> None:
    recorded = _run(0, 3, set())._replace(failing=None)
    assert differences(recorded, _run(0, 3, set())) == []
    assert (
        differences(recorded, _run(1, 2, {"t.py::x"}))[0] == "it ended with exit 1, recorded exit 0"
    )


def test_drift_findings_name_what_changed() -> None:
    from core.drill.drift import drift_findings

    checks = [
        ("harness", "warn", "claude-code was 1.0.3, now 1.0.5"),
        ("transcript", "pass", "the harness transcript is still present"),
        ("ledger", "fail", "an approval is pending"),  # not drift: left to validation
    ]
    then = {"name": "opus", "version": "4"}
    assert drift_findings(checks, then, {"name": "opus", "version": "5"}) == [
        "harness: claude-code was 1.0.3, now 1.0.5 (warn)",
        "transcript: the harness transcript is still present",
        "model: was opus@4, now opus@5 (warn)",
    ]
    assert drift_findings([], None, None) == []
    assert drift_findings([], then, None) == ["model: now not known (unknown)"]


_OBSERVED = st.builds(
    Observed,
    exit_code=st.integers(min_value=0, max_value=3),
    timed_out=st.just(False),
    summary=st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {
                "tool": st.just("pytest"),
                "counts": st.dictionaries(
                    st.sampled_from(["passed", "failed", "errors", "warnings"]),
                    st.integers(min_value=0, max_value=5),
                ),
            }
        ),
    ),
    failing=st.frozensets(st.sampled_from(["t.py::a", "t.py::b", "t.py::c"])),
    duration_ms=st.none(),
    signal=st.none(),
)


@given(_OBSERVED, _OBSERVED)
def test_a_replay_is_faithful_exactly_when_nothing_compared_differs(
    recorded: Observed, replayed: Observed
) -> None:
    found = differences(recorded, replayed)
    assert differences(recorded, recorded) == []
    same_tests = recorded.failing == replayed.failing
    same_status = recorded.exit_code == replayed.exit_code

    def counts(observed: Observed) -> dict[str, int]:
        summary = observed.summary or {"counts": {}}
        return {k: v for k, v in summary["counts"].items() if k != "warnings"}

    same_counts = recorded.summary is None or counts(recorded) == counts(replayed)
    assert (found == []) == (same_tests and same_status and same_counts)
