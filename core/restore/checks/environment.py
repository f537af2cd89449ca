"""Checks on the machine the task resumes on: runtime, harness version, credentials, transcript.

Differences here mostly warn (a new Python, another harness version); a credential the task names
that is not set blocks, since the resumed agent would fail at its first use of it. Credential
values are compared by keyed fingerprint only, never stored.
"""

from __future__ import annotations

import platform
import shlex
import subprocess
from pathlib import Path

from core.agent_env import harness_version
from core.restore.findings import Finding, Status, ValidationInputs, manifest_of
from core.snapshot import git_version

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any


def check_runtime(inputs: ValidationInputs) -> list[Finding]:
    """Same OS, architecture, Python and harness version as at the checkpoint."""
    env = manifest_of(inputs).get("environment", {})
    findings: list[Finding] = []
    current = {
        "os": platform.system(),
        "arch": platform.machine(),
        "python": platform.python_version(),
        "git": git_version(inputs.scratch),  # the cache checkpoints keep: no `git --version`
    }
    for key in ("os", "arch"):
        if env.get(key) and env[key] != current[key]:
            findings.append(
                Finding(
                    "runtime",
                    Status.WARN,
                    f"{key} was {env[key]}, now {current[key]}",
                    "rebuild native dependencies after resuming",
                )
            )
    recorded_py, now_py = env.get("python", ""), current["python"]
    if recorded_py and recorded_py.split(".")[:2] != now_py.split(".")[:2]:
        findings.append(
            Finding(
                "runtime",
                Status.WARN,
                f"Python was {recorded_py}, now {now_py}",
                f"use Python {'.'.join(recorded_py.split('.')[:2])} or reinstall the environment",
            )
        )
    if not findings:
        findings.append(
            Finding(
                "runtime", Status.PASS, f"same OS, arch and Python ({now_py}) as the checkpoint"
            )
        )
    findings.extend(_harness_findings(inputs))
    return findings


def _harness_findings(inputs: ValidationInputs) -> list[Finding]:
    harness = manifest_of(inputs).get("harness") or {}
    if not harness.get("name"):
        return []
    name, recorded = harness["name"], harness.get("version")
    table = inputs.harness_config
    current = table.get("version") or harness_version(name, inputs.environment)
    if not current and table.get("version_command"):
        try:
            out = subprocess.run(
                shlex.split(table["version_command"]),
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            current = out.stdout.strip().split()[-1] if out.stdout.strip() else None
        except (OSError, subprocess.TimeoutExpired):
            current = None
    if not recorded or not current:
        return [
            Finding(
                "harness",
                Status.UNKNOWN,
                f"{name} version {'now' if recorded else 'at checkpoint'} is not known",
                f"set [harness.{name}] version or version_command in config.toml",
            )
        ]
    if current != recorded:
        return [
            Finding(
                "harness",
                Status.WARN,
                f"{name} was {recorded}, now {current}",
                f"install {name} {recorded}, or accept that the resumed session may behave "
                "differently",
            )
        ]
    return [Finding("harness", Status.PASS, f"{name} {current} as at the checkpoint")]


def check_credentials(inputs: ValidationInputs) -> list[Finding]:
    """Every credential the task names is set, with the fingerprint it had."""
    recorded: list[dict[str, Any]] = manifest_of(inputs).get("credentials", [])
    if not recorded:
        return [Finding("credentials", Status.PASS, "the task names no credentials")]
    from core.security.fingerprint import fingerprint  # `hmac` loads OpenSSL: only when needed

    findings: list[Finding] = []
    for item in recorded:
        name = item["name"]
        value = inputs.environment.get(name)
        if value is None:
            findings.append(
                Finding(
                    "credentials",
                    Status.FAIL,
                    f"{name} is not set",
                    f"export {name} before resuming",
                )
            )
        elif (
            item.get("fingerprint")
            and fingerprint(inputs.fingerprint_key, value) != item["fingerprint"]
        ):
            findings.append(
                Finding(
                    "credentials",
                    Status.WARN,
                    f"{name} has a different value than at the checkpoint",
                    f"make sure the new {name} grants the same access",
                )
            )
        elif not item.get("present"):
            findings.append(
                Finding(
                    "credentials",
                    Status.WARN,
                    f"{name} is set now but was not at the checkpoint",
                    "nothing to do if this is intended",
                )
            )
    if not findings:
        findings.append(
            Finding(
                "credentials",
                Status.PASS,
                f"{len(recorded)} credential(s) present with the same fingerprint",
            )
        )
    return findings


def check_transcript(inputs: ValidationInputs) -> list[Finding]:
    """The harness's transcript is still there to continue the conversation."""
    harness = manifest_of(inputs).get("harness") or {}
    path = harness.get("transcript_path")
    if not path:
        return []
    if Path(path).exists():
        return [Finding("transcript", Status.PASS, "the harness transcript is still present")]
    return [
        Finding(
            "transcript",
            Status.WARN,
            f"the harness transcript {path} is gone",
            "the conversation cannot be continued; the resume brief carries the state",
        )
    ]
