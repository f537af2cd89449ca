"""Checks on the checkpoint itself: a manifest this Pitstop can read, complete and undamaged.

A manifest from a newer Pitstop makes the verdict `unsupported` and stops validation there, so it
is never half-read.
"""

from __future__ import annotations

from core.models import CheckpointState
from core.restore.findings import Finding, Status, ValidationInputs, Verdict, manifest_of
from core.store import MANIFEST_SCHEMA


def check_schema(inputs: ValidationInputs) -> list[Finding]:
    """The manifest's schema is one this Pitstop reads; a newer one is unsupported."""
    if inputs.schema_error:
        return [
            Finding(
                "schema",
                Status.FAIL,
                inputs.schema_error,
                "upgrade pitstop to read this checkpoint",
                Verdict.UNSUPPORTED,
            )
        ]
    schema = manifest_of(inputs).get("schema")
    if (
        inputs.checkpoint
        and inputs.checkpoint.state is CheckpointState.COMPLETE
        and schema != MANIFEST_SCHEMA
    ):
        return [
            Finding(
                "schema",
                Status.FAIL,
                f"manifest schema {schema!r} is not supported",
                "upgrade pitstop to read this checkpoint",
                Verdict.UNSUPPORTED,
            )
        ]
    return [Finding("schema", Status.PASS, f"manifest schema {MANIFEST_SCHEMA}")]


def check_complete(inputs: ValidationInputs) -> list[Finding]:
    """The checkpoint is complete and every stored part of it verifies."""
    cp = inputs.checkpoint
    if cp is None or cp.state is not CheckpointState.COMPLETE:
        state = cp.state.value if cp else "missing"
        why = f": {cp.failure}" if cp and cp.failure else ""
        return [
            Finding(
                "complete",
                Status.FAIL,
                f"checkpoint is {state}{why}",
                "resume the newest complete checkpoint instead (`pitstop checkpoints`)",
            )
        ]
    if inputs.damage:
        return [
            Finding(
                "complete",
                Status.FAIL,
                f"damaged: {inputs.damage[0]}",
                "resume an earlier checkpoint; this one cannot be restored",
            )
        ]
    return [Finding("complete", Status.PASS, "complete; every stored part verifies")]
