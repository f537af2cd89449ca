"""The break-even model of DESIGN §4: does a checkpoint pay for itself, or is a restart cheaper?

Expected value of a checkpoint = P(interruption) × replay cost avoided − (creation + storage +
P(interruption) × (restore + validation)). Every term is a named field of a frozen dataclass and
all arithmetic is `Decimal`, so the worked figures come out exactly, not as float approximations:

- (a) 10% × $8 = $0.80 avoided against $0.12 + $0.05. `$0.12` is the cost paid whether or not
  the task is interrupted (creation + storage); `$0.05` is the expected cost of using the
  checkpoint, P × (restore + validation) = 10% × $0.50. The same split as (b), where `$0.10` is
  creation and `5% × $0.20` the expected restore and validation.
- (b) a four-hour migration: replay $7 machine + 20 min × $90/h = $37 exposure; at 5%, $1.85
  expected loss avoided against $0.10 + 5% × $0.20 = $0.11.
- (c) a two-minute lint fix: P = 2%, replay 2 min × $90/h = $3; $0.06 avoided is less than
  $0.10 + 2% × $0.20 = $0.104, so restarting wins.

`estimate_task` derives a real task's replay cost from what it recorded (money or tokens spent,
evidence durations of installs, builds and test runs) plus configured re-orientation time and
rates. The policy that refuses every-turn checkpoints under a minimum interval is in
`core.economics.policy` (a hook asks it after every turn). Nothing here reads the store:
callers pass plain facts in.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from core.errors import UsageError

if TYPE_CHECKING:
    from core.config import EconomicsSettings

ZERO = Decimal(0)
ONE = Decimal(1)
MINUTES_PER_HOUR = Decimal(60)
BYTES_PER_GIB = Decimal(1024**3)
DAYS_PER_MONTH = Decimal(30)

Amount = Decimal | int | float | str


def to_decimal(value: Amount, what: str = "amount") -> Decimal:
    """An exact Decimal: floats go through their shortest text form, so 0.1 stays 0.1."""
    if isinstance(value, Decimal):
        result = value
    elif isinstance(value, bool):
        raise UsageError(f"invalid {what} {value!r}: expected a number")
    elif isinstance(value, int | str):
        try:
            result = Decimal(str(value).strip())
        except ArithmeticError as exc:  # decimal.InvalidOperation
            raise UsageError(f"invalid {what} {value!r}: expected a number") from exc
    else:
        result = Decimal(repr(value))
    if not result.is_finite():
        raise UsageError(f"invalid {what} {value!r}: expected a finite number")
    return result


def _non_negative(value: Decimal, what: str) -> None:
    if value < 0:
        raise UsageError(f"{what} must not be negative (got {value})")


class Decision(StrEnum):
    """What the model recommends."""

    CHECKPOINT = "checkpoint"
    RESTART = "restart"


@dataclass(frozen=True)
class ReplayCost:
    """What redoing lost work costs: the exposure an interruption without a checkpoint causes."""

    spent_usd: Decimal = ZERO  # tokens and paid calls spent getting here, spent again
    machine_usd: Decimal = ZERO  # sandbox / CI time to rebuild the environment and rerun
    environment_minutes: Decimal = ZERO  # setup, installs, builds, test runs to redo
    reorientation_minutes: Decimal = ZERO  # a person finding their way back in
    human_usd_per_hour: Decimal = ZERO

    def __post_init__(self) -> None:
        for name in (
            "spent_usd",
            "machine_usd",
            "environment_minutes",
            "reorientation_minutes",
            "human_usd_per_hour",
        ):
            _non_negative(getattr(self, name), name.replace("_", " "))

    @property
    def human_usd(self) -> Decimal:
        """Re-orientation minutes × the hourly rate."""
        return self.reorientation_minutes * self.human_usd_per_hour / MINUTES_PER_HOUR

    @property
    def total_usd(self) -> Decimal:
        """The exposure in dollars: spent + machine + human."""
        return self.spent_usd + self.machine_usd + self.human_usd

    @property
    def minutes(self) -> Decimal:
        """Wall-clock minutes a replay takes, as far as they were measured or configured."""
        return self.environment_minutes + self.reorientation_minutes


@dataclass(frozen=True)
class CheckpointCost:
    """What a checkpoint costs: always creation and storage, and restore + validation if used."""

    create_usd: Decimal = ZERO
    storage_usd: Decimal = ZERO
    restore_usd: Decimal = ZERO
    validation_usd: Decimal = ZERO

    def __post_init__(self) -> None:
        for name in ("create_usd", "storage_usd", "restore_usd", "validation_usd"):
            _non_negative(getattr(self, name), name.replace("_", " "))

    @property
    def fixed_usd(self) -> Decimal:
        """Paid whether or not the task is interrupted: creation + storage."""
        return self.create_usd + self.storage_usd

    @property
    def use_usd(self) -> Decimal:
        """Paid only when the checkpoint is used: restore + validation."""
        return self.restore_usd + self.validation_usd


@dataclass(frozen=True)
class Scenario:
    """One question for the model: this replay cost, this checkpoint cost, this chance."""

    p_interrupt: Decimal
    replay: ReplayCost
    checkpoint: CheckpointCost

    def __post_init__(self) -> None:
        if not ZERO <= self.p_interrupt <= ONE:
            raise UsageError(
                f"the interruption probability must be between 0 and 1 (got {self.p_interrupt})"
            )


@dataclass(frozen=True)
class BreakEven:
    """The model's answer, every term named."""

    scenario: Scenario
    exposure_usd: Decimal  # the replay cost an interruption would cause
    expected_loss_avoided_usd: Decimal  # P × exposure
    fixed_cost_usd: Decimal  # creation + storage
    expected_use_cost_usd: Decimal  # P × (restore + validation)
    expected_checkpoint_cost_usd: Decimal  # fixed + expected use
    net_value_usd: Decimal  # avoided − cost
    decision: Decision  # checkpoint only when the net value is positive
    replay_minutes: Decimal
    expected_minutes_avoided: Decimal  # P × replay minutes
    break_even_p: Decimal | None  # the P above which a checkpoint pays; None: never

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types; money as numbers in dollars."""
        replay = self.scenario.replay
        cost = self.scenario.checkpoint
        return {
            "p_interrupt": json_number(self.scenario.p_interrupt),
            "replay": {
                "spent_usd": json_number(replay.spent_usd),
                "machine_usd": json_number(replay.machine_usd),
                "environment_minutes": json_number(replay.environment_minutes),
                "reorientation_minutes": json_number(replay.reorientation_minutes),
                "human_usd_per_hour": json_number(replay.human_usd_per_hour),
                "human_usd": json_number(replay.human_usd),
                "total_usd": json_number(replay.total_usd),
                "minutes": json_number(replay.minutes),
            },
            "checkpoint_cost": {
                "create_usd": json_number(cost.create_usd),
                "storage_usd": json_number(cost.storage_usd),
                "restore_usd": json_number(cost.restore_usd),
                "validation_usd": json_number(cost.validation_usd),
            },
            "exposure_usd": json_number(self.exposure_usd),
            "expected_loss_avoided_usd": json_number(self.expected_loss_avoided_usd),
            "fixed_cost_usd": json_number(self.fixed_cost_usd),
            "expected_use_cost_usd": json_number(self.expected_use_cost_usd),
            "expected_checkpoint_cost_usd": json_number(self.expected_checkpoint_cost_usd),
            "net_value_usd": json_number(self.net_value_usd),
            "decision": self.decision.value,
            "replay_minutes": json_number(self.replay_minutes),
            "expected_minutes_avoided": json_number(self.expected_minutes_avoided),
            "break_even_p": None if self.break_even_p is None else json_number(self.break_even_p),
        }


def json_number(value: Decimal) -> int | float:
    """A Decimal as the JSON number that prints the same digits (1.85, not 1.8500000000000001)."""
    normal = value.normalize()
    if normal == normal.to_integral_value():
        return int(normal)
    return float(normal)


def break_even(scenario: Scenario) -> BreakEven:
    """Weigh expected loss avoided against expected checkpoint cost."""
    p = scenario.p_interrupt
    exposure = scenario.replay.total_usd
    avoided = p * exposure
    fixed = scenario.checkpoint.fixed_usd
    expected_use = p * scenario.checkpoint.use_usd
    cost = fixed + expected_use
    net = avoided - cost
    margin = exposure - scenario.checkpoint.use_usd
    threshold = fixed / margin if margin > 0 else None
    return BreakEven(
        scenario=scenario,
        exposure_usd=exposure,
        expected_loss_avoided_usd=avoided,
        fixed_cost_usd=fixed,
        expected_use_cost_usd=expected_use,
        expected_checkpoint_cost_usd=cost,
        net_value_usd=net,
        decision=Decision.CHECKPOINT if net > 0 else Decision.RESTART,
        replay_minutes=scenario.replay.minutes,
        expected_minutes_avoided=p * scenario.replay.minutes,
        break_even_p=threshold if threshold is not None and threshold <= ONE else None,
    )


def money(value: Decimal) -> str:
    """`$1.85`, `$37.00`; below a dollar up to four decimals (`$0.104`), negatives `-$0.06`."""
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    cents = magnitude.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    if cents == magnitude or magnitude >= 1:
        return f"{sign}${cents:,.2f}"
    fine = magnitude.quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP)
    return f"{sign}${_trimmed(fine, 2)}"


def percent(value: Decimal) -> str:
    """`5%`, `2.5%`."""
    return f"{_trimmed((value * 100).quantize(Decimal('0.01'), rounding=ROUND_HALF_UP), 0)}%"


def _trimmed(value: Decimal, keep: int) -> str:
    text = f"{value:f}"
    if "." not in text:
        return text
    whole, fraction = text.split(".")
    fraction = fraction.rstrip("0").ljust(keep, "0")
    return f"{whole}.{fraction}" if fraction else whole


# --- estimating a real task -------------------------------------------------------------------


class WorkKind(StrEnum):
    """What a recorded command was, as far as replaying the task is concerned."""

    INSTALL = "install"  # dependency installs, environment setup
    BUILD = "build"
    TEST = "test"  # test runs and checks (linters, type checkers)
    OTHER = "other"  # not counted as environment reconstruction


COUNTED_KINDS = (WorkKind.INSTALL, WorkKind.BUILD, WorkKind.TEST)

# Summary recognisers (core.evidence.summaries) name the tool that printed the report.
_TOOL_KIND = {
    "pip install": WorkKind.INSTALL,
    "npm install": WorkKind.INSTALL,
    "pytest": WorkKind.TEST,
    "unittest": WorkKind.TEST,
    "jest": WorkKind.TEST,
    "vitest": WorkKind.TEST,
    "go test": WorkKind.TEST,
    "cargo test": WorkKind.TEST,
    "ruff": WorkKind.TEST,
    "mypy": WorkKind.TEST,
}

# Programs that only run another program: look past them (and their options) to the real one.
_WRAPPERS = {"env", "time", "nice", "npx", "pnpx", "bunx", "sudo", "nohup", "timeout", "xvfb-run"}
_RUNNERS = {("uv", "run"), ("poetry", "run"), ("pipenv", "run"), ("hatch", "run"), ("pdm", "run")}
_SHELLS = {"sh", "bash", "zsh", "dash"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

_INSTALL_VERBS = {"install", "i", "ci", "sync", "add", "restore", "fetch", "download"}
_INSTALL_PROGRAMS = {
    "pip": {"install", "download", "sync"},
    "pip3": {"install", "download"},
    "uv": {"sync", "pip", "add", "venv"},
    "poetry": {"install", "add", "lock"},
    "pipenv": {"install", "sync"},
    "pdm": {"install", "sync", "add"},
    "npm": {"install", "i", "ci", "add"},
    "pnpm": {"install", "i", "add", "fetch"},
    "yarn": {"install", "add", ""},
    "bun": {"install", "i", "add"},
    "bundle": {"install"},
    "gem": {"install"},
    "cargo": {"fetch", "install"},
    "go": {"mod", "get", "install"},
    "apt-get": {"install"},
    "apt": {"install"},
    "brew": {"install", "bundle"},
    "conda": {"install", "create", "env"},
    "mamba": {"install", "create", "env"},
    "composer": {"install", "update", "require"},
    "dotnet": {"restore"},
    "mvn": {"dependency:resolve", "dependency:go-offline"},
}
_BUILD_PROGRAMS = {
    "make": None,
    "cmake": None,
    "ninja": None,
    "meson": None,
    "bazel": {"build"},
    "tsc": None,
    "webpack": None,
    "gradle": {"build", "assemble", "compileJava", "jar"},
    "gradlew": {"build", "assemble", "compileJava", "jar"},
    "mvn": {"package", "compile", "install", "verify"},
    "cargo": {"build", "check"},
    "go": {"build", "generate"},
    "docker": {"build", "buildx", "compose"},
    "npm": {"run-script:build", "build"},
    "pnpm": {"build", "run-script:build"},
    "yarn": {"build", "run-script:build"},
    "bun": {"build", "run-script:build"},
    "vite": {"build"},
    "uv": {"build"},
    "poetry": {"build"},
    "hatch": {"build"},
    "python": {"-m:build"},
    "dotnet": {"build", "publish"},
}
_TEST_PROGRAMS = {
    "pytest": None,
    "py.test": None,
    "tox": None,
    "nox": None,
    "jest": None,
    "vitest": None,
    "mocha": None,
    "ruff": None,
    "mypy": None,
    "pyright": None,
    "eslint": None,
    "flake8": None,
    "pylint": None,
    "ctest": None,
    "cargo": {"test", "clippy", "nextest"},
    "go": {"test", "vet"},
    "npm": {"test", "t", "run-script:test", "run-script:lint", "run-script:check"},
    "pnpm": {"test", "run-script:test", "run-script:lint"},
    "yarn": {"test", "run-script:test", "run-script:lint"},
    "bun": {"test"},
    "mvn": {"test"},
    "gradle": {"test", "check"},
    "gradlew": {"test", "check"},
    "make": {"test", "check", "lint"},
    "dotnet": {"test"},
    "python": {"-m:pytest", "-m:unittest", "-m:mypy", "-m:ruff"},
}
_LABEL_WORDS = (
    (re.compile(r"\b(install|setup|set up|deps|dependencies|bootstrap|sync)\b"), WorkKind.INSTALL),
    (re.compile(r"\b(build|compile|bundle|package)\b"), WorkKind.BUILD),
    (re.compile(r"\b(tests?|pytest|lint|check|typecheck|suite)\b"), WorkKind.TEST),
)


def _program(argv: Sequence[str]) -> tuple[str, list[str]]:
    """The real program and its arguments, looking past wrappers, runners and `sh -c`."""
    args = list(argv)
    for _ in range(8):  # wrappers nest only so deep in practice
        while args and _ASSIGNMENT.match(args[0]):  # `CI=1 make`: environment, not a program
            args = args[1:]
        if not args:
            return "", []
        name = os.path.basename(args[0])
        name = re.sub(r"^(python|pip)3(\.\d+)?$", r"\g<1>", name)
        if name in _WRAPPERS:
            rest = args[1:]
            while rest and (rest[0].startswith("-") or "=" in rest[0] or rest[0][:1].isdigit()):
                rest = rest[1:]
            args = rest
            continue
        if len(args) >= 2 and (name, args[1]) in _RUNNERS:
            args = args[2:]
            continue
        return name, args[1:]
    return "", []


def _verb(program: str, rest: list[str]) -> str:
    """The subcommand that decides the kind: `install`, `run-script:build`, `-m:pytest`."""
    words = [arg for arg in rest if not arg.startswith("-") or arg == "-m"]
    if program == "python":
        return f"-m:{words[1]}" if len(words) >= 2 and words[0] == "-m" else ""
    if not words:
        return ""
    if words[0] in ("run", "run-script") and len(words) >= 2:
        return f"run-script:{words[1]}"
    return words[0]


def _matches(table: Mapping[str, set[str] | None], program: str, verb: str) -> bool:
    if program not in table:
        return False
    verbs = table[program]
    return verbs is None or verb in verbs


def _commands(argv: Sequence[str]) -> list[list[str]]:
    """The command lines inside `argv`: itself, or each part of a `sh -c 'a && b; c'` script."""
    if (
        len(argv) >= 3
        and os.path.basename(argv[0]) in _SHELLS
        and argv[1] in ("-c", "-lc", "-ec", "-ic")
    ):
        lexer = shlex.shlex(argv[2], posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            words = list(lexer)
        except ValueError:
            return [list(argv)]
        parts: list[list[str]] = [[]]
        for word in words:
            if word in ("&&", "||", ";", "|", "&", ";;", "(", ")"):
                parts.append([])
            else:
                parts[-1].append(word)
        return [part for part in parts if part]
    return [list(argv)]


def _classify_command(argv: Sequence[str]) -> WorkKind:
    program, rest = _program(argv)
    if not program:
        return WorkKind.OTHER
    verb = _verb(program, rest)
    if program == "python" and verb == "-m:pip":
        program, verb = "pip", _verb("pip", rest[2:])
    if program == "uv" and verb == "pip":
        return WorkKind.INSTALL if "install" in rest or "sync" in rest else WorkKind.OTHER
    if _matches(_TEST_PROGRAMS, program, verb):
        return WorkKind.TEST
    if _matches(_INSTALL_PROGRAMS, program, verb):
        return WorkKind.INSTALL
    if _matches(_BUILD_PROGRAMS, program, verb):
        return WorkKind.BUILD
    return WorkKind.OTHER


def classify_run(
    argv: Sequence[str] = (), summary_tool: str | None = None, label: str | None = None
) -> WorkKind:
    """Install, build, test or other: from the command line, else the summary tool or label.

    A shell script's parts are classified one by one; the first that is an install, then a
    build, then a test, decides (setting up an environment dominates what runs after it).
    """
    found = {_classify_command(command) for command in _commands(argv)}
    for kind in COUNTED_KINDS:
        if kind in found:
            return kind
    if summary_tool and summary_tool in _TOOL_KIND:
        return _TOOL_KIND[summary_tool]
    if label:
        lowered = label.lower()
        for pattern, kind in _LABEL_WORDS:
            if pattern.search(lowered):
                return kind
    return WorkKind.OTHER


@dataclass(frozen=True)
class RecordedRun:
    """One evidence item as the estimate sees it: how long it took and what it was."""

    evidence_id: int
    duration_ms: int
    kind: WorkKind
    label: str | None = None


@dataclass(frozen=True)
class TaskFacts:
    """What a task recorded that bears on its replay and checkpoint costs."""

    task_id: str
    tokens_used: int
    usd_used: Decimal
    checkpoint_bytes: int  # bytes the task's kept checkpoints hold
    checkpoint_count: int
    mean_creation_ms: int | None = None


@dataclass(frozen=True)
class KindTotal:
    """Recorded runs of one kind: how many, and their minutes."""

    kind: WorkKind
    runs: int
    minutes: Decimal
    counted: bool


@dataclass(frozen=True)
class TaskEstimate:
    """A task's replay cost as derived from its record, and what the model says about it."""

    task_id: str
    spent_basis: str  # "usd_used", "tokens" or "nothing recorded"
    kinds: tuple[KindTotal, ...]
    result: BreakEven
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types."""
        return {
            "task": self.task_id,
            "spent_basis": self.spent_basis,
            "runs": [
                {
                    "kind": total.kind.value,
                    "runs": total.runs,
                    "minutes": json_number(total.minutes.quantize(Decimal("0.01"))),
                    "counted": total.counted,
                }
                for total in self.kinds
            ],
            **self.result.as_dict(),
            "notes": list(self.notes),
        }


def estimate_task(
    facts: TaskFacts,
    runs: Sequence[RecordedRun],
    settings: EconomicsSettings,
    *,
    p_interrupt: Amount | None = None,
    reorientation_minutes: Amount | None = None,
    human_usd_per_hour: Amount | None = None,
    storage_days: Amount = DAYS_PER_MONTH,
) -> TaskEstimate:
    """Derive a task's replay cost from its record and weigh a checkpoint against a restart.

    Replay = money spent (or tokens × the configured blended rate when only tokens were recorded)
    + machine time to redo its installs, builds and test runs (evidence durations × the machine
    rate) + re-orientation minutes × the human rate. The checkpoint's cost is the configured
    creation, restore and validation cost plus storage of an average checkpoint's bytes, priced
    per GiB-month for `storage_days` (callers pass the retention TTL).
    """
    notes: list[str] = []
    if facts.usd_used > 0:
        spent, basis = facts.usd_used, "usd_used"
    elif facts.tokens_used > 0:
        rate = to_decimal(settings.usd_per_million_tokens, "economics.usd_per_million_tokens")
        spent, basis = Decimal(facts.tokens_used) * rate / Decimal(1_000_000), "tokens"
        notes.append(
            f"no money recorded: {facts.tokens_used} tokens priced at "
            f"{money(rate)} per million (economics.usd_per_million_tokens)"
        )
    else:
        spent, basis = ZERO, "nothing recorded"
        notes.append(
            "the task recorded no tokens or money; pass --tokens-used / --usd-used to checkpoints"
        )
    totals: dict[WorkKind, tuple[int, int]] = {kind: (0, 0) for kind in WorkKind}
    for run in runs:
        count, millis = totals[run.kind]
        totals[run.kind] = (count + 1, millis + max(run.duration_ms, 0))
    kinds = tuple(
        KindTotal(kind, count, Decimal(millis) / Decimal(60_000), kind in COUNTED_KINDS)
        for kind, (count, millis) in totals.items()
    )
    environment_minutes = sum((k.minutes for k in kinds if k.counted), ZERO)
    if not runs:
        notes.append("no evidence recorded: environment reconstruction counted as zero")
    machine_rate = to_decimal(settings.machine_usd_per_hour, "economics.machine_usd_per_hour")
    replay = ReplayCost(
        spent_usd=spent,
        machine_usd=environment_minutes * machine_rate / MINUTES_PER_HOUR,
        environment_minutes=environment_minutes,
        reorientation_minutes=to_decimal(
            settings.reorientation_minutes
            if reorientation_minutes is None
            else reorientation_minutes,
            "re-orientation minutes",
        ),
        human_usd_per_hour=to_decimal(
            settings.human_usd_per_hour if human_usd_per_hour is None else human_usd_per_hour,
            "hourly rate",
        ),
    )
    storage_rate = to_decimal(
        settings.storage_usd_per_gib_month, "economics.storage_usd_per_gib_month"
    )
    per_checkpoint_bytes = (
        Decimal(facts.checkpoint_bytes) / Decimal(facts.checkpoint_count)
        if facts.checkpoint_count
        else ZERO
    )
    cost = CheckpointCost(
        create_usd=to_decimal(settings.create_usd, "economics.create_usd"),
        storage_usd=per_checkpoint_bytes
        / BYTES_PER_GIB
        * storage_rate
        * to_decimal(storage_days, "storage days")
        / DAYS_PER_MONTH,
        restore_usd=to_decimal(settings.restore_usd, "economics.restore_usd"),
        validation_usd=to_decimal(settings.validation_usd, "economics.validation_usd"),
    )
    scenario = Scenario(
        p_interrupt=to_decimal(
            settings.p_interrupt if p_interrupt is None else p_interrupt, "--p-interrupt"
        ),
        replay=replay,
        checkpoint=cost,
    )
    return TaskEstimate(facts.task_id, basis, kinds, break_even(scenario), tuple(notes))
