"""Harness and model drift a drill reports: findings to read, never a reason to fail.

The harness version and transcript are what restore validation already checks (`runtime`,
`harness`, `transcript` findings, with the harness's own `version_command` where it has one);
the model is the one the task records now against the one its checkpoint's manifest names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

DRIFT_CHECKS = ("runtime", "harness", "transcript")


def _named(value: Mapping[str, Any] | None) -> str | None:
    if not value or not value.get("name"):
        return None
    version = value.get("version")
    return f"{value['name']}@{version}" if version else str(value["name"])


def drift_findings(
    validation: Iterable[tuple[str, str, str]],
    manifest_model: Mapping[str, Any] | None,
    model_now: Mapping[str, Any] | None,
) -> list[str]:
    """One line per finding: `harness: claude-code was 1.0.3, now 1.0.5` (status in words).

    `validation` holds (check, status, message) of the drill's restore validation."""
    found = [
        f"{check}: {message}" + ("" if status == "pass" else f" ({status})")
        for check, status, message in validation
        if check in DRIFT_CHECKS
    ]
    then, now = _named(manifest_model), _named(model_now)
    if then and now and then != now:
        found.append(f"model: was {then}, now {now} (warn)")
    elif then and now:
        found.append(f"model: {now} as at the checkpoint")
    elif then or now:
        found.append(f"model: {'now' if then else 'at the checkpoint'} not known (unknown)")
    return found
