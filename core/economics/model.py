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

This module is where callers import the model from; its parts live beside it: `amounts` (exact
Decimals and how they print), `break_even` (the model), `work_kinds` (install, build or test?)
and `estimate` (a real task's figures).
"""

from __future__ import annotations

from core.economics.amounts import (
    BYTES_PER_GIB,
    DAYS_PER_MONTH,
    MINUTES_PER_HOUR,
    ONE,
    ZERO,
    Amount,
    json_number,
    money,
    percent,
    to_decimal,
)
from core.economics.break_even import (
    BreakEven,
    CheckpointCost,
    Decision,
    ReplayCost,
    Scenario,
    break_even,
)
from core.economics.estimate import KindTotal, RecordedRun, TaskEstimate, TaskFacts, estimate_task
from core.economics.work_kinds import COUNTED_KINDS, WorkKind, classify_run

__all__ = [
    "BYTES_PER_GIB",
    "COUNTED_KINDS",
    "DAYS_PER_MONTH",
    "MINUTES_PER_HOUR",
    "ONE",
    "ZERO",
    "Amount",
    "BreakEven",
    "CheckpointCost",
    "Decision",
    "KindTotal",
    "RecordedRun",
    "ReplayCost",
    "Scenario",
    "TaskEstimate",
    "TaskFacts",
    "WorkKind",
    "break_even",
    "classify_run",
    "estimate_task",
    "json_number",
    "money",
    "percent",
    "to_decimal",
]
