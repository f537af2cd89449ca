"""What `pitstop key show` says: the public halves of your keys, and how others check them.

Kept apart from the commands so the dashboard or a test can read the same words. Nothing here
is secret: the recipient and the signing key are public, the fingerprint is a short hash of the
signing key made to be read aloud and compared on both ends before anyone trusts a roster.
"""

from __future__ import annotations

import shlex
from typing import Any

LABEL = 14


def _operator_label() -> str:
    """The name an owner would give you on a roster: your configured operator name."""
    from core.config import load_config
    from core.errors import PitstopError

    try:
        return load_config().operator
    except PitstopError:
        return "LABEL"


def aloud(fingerprint: str) -> str:
    """A fingerprint one character at a time, group by group: `K 7 Q F, 2 M 9 X, …`."""
    return ", ".join(" ".join(group) for group in fingerprint.split("-"))


def share_command(recipient: str | None, signer: str | None, label: str) -> str:
    """The line an owner runs to add you to a task's roster."""
    parts = ["pitstop", "task", "share", "TASK"]
    if recipient:
        parts += ["--recipient", shlex.quote(recipient)]
    if signer:
        parts += ["--signer", shlex.quote(signer)]
    return " ".join([*parts, "--name", shlex.quote(label)])


def public_halves() -> dict[str, Any]:
    """Your recipient, signing key and fingerprint, each with where it comes from; an error
    (how to get one) only when you have neither an identity nor a signing key."""
    from core.security import identity, signing

    operator = identity.load_identity_or_none()
    signer = signing.load_signing_key_or_none()
    if operator is None and signer is None:
        identity.load_identity()  # raises the error that says how to get one
    recipient = operator.recipient if operator else None
    public = signer.public if signer else None
    return {
        "recipient": recipient,
        "source": operator.source if operator else None,
        "kind": operator.kind if operator else None,
        "signing": (
            {"public": signer.public, "fingerprint": signer.fingerprint, "source": signer.source}
            if signer
            else None
        ),
        "share_command": share_command(recipient, public, _operator_label()),
    }


def _row(label: str, value: str) -> str:
    return f"{label:<{LABEL}} {value}"


def show_lines(document: dict[str, Any]) -> list[str]:
    """`key show`'s human text for what `public_halves` returned."""
    from core.security import identity, signing

    lines = []
    if document["recipient"]:
        lines += [_row("age recipient", document["recipient"]),
                  _row("", f"from {document['source']}")]  # fmt: skip
    else:
        lines.append(_row("age recipient", f"none: {identity.HOW_TO_GET_ONE}"))
    signer = document["signing"]
    if signer:
        lines += [
            _row("signing key", signer["public"]),
            _row("", f"from {signer['source']}"),
            _row("fingerprint", signer["fingerprint"]),
            _row("", f"read it aloud: {aloud(signer['fingerprint'])}"),
        ]
    else:
        lines.append(_row("signing key", f"none: {signing.HOW_TO_GET_ONE}"))
    lines += [
        "",
        "Compare the fingerprint by voice with whoever adds you; an owner adds you with:",
        f"  {document['share_command']}",
    ]
    return lines
