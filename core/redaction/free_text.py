"""Free text a person or an agent typed (reasons, notes, actions), made safe to store.

Audit reasons, approval actions and side-effect notes are written by people and agents, and a
secret pasted into one must not reach the store in clear (invariant 2): text that may be shown
reworded is redacted, text that must be kept exactly (an idempotency key, a command) is refused.
The redaction rules load only when there is text to look at.
"""

from __future__ import annotations

from core.errors import UsageError


def persistable(text: str) -> str:
    """Free text as it may be stored: any secret in it replaced by `[REDACTED:rule]` (inv. 2)."""
    from core.redaction import redact  # its rules load only when there is text to redact

    return redact.redact_text(text.strip())[0]


def refuse_secrets(text: str, what: str) -> str:
    """Refuse text that must be kept exactly (a key, a command) when it holds a secret."""
    from core.redaction import redact

    findings = redact.redact_text(text)[1]
    if findings:
        raise UsageError(
            f"the {what} holds what looks like a secret ({findings[0].rule}), and Pitstop never "
            "stores one; pass it through an environment variable instead"
        )
    return text
