"""Trust in words: a task's roster, its owner's fingerprint and its refused facts, for people.

The CLI (`task show`, `task refused`, `fetch`, `remote list`) and the dashboard say the same
things the same way, so an operator who reads a fingerprint in one place finds it in the other.
Everything here is plain text built from what `core.engine.trust` returns; nothing is decided.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

UNSIGNED = "unsigned (older Pitstop)"

PINNED = {
    "created": "founded here",
    "first-use": "pinned on first fetch (trust on first use): compare it with its owner",
    "expected": "pinned from --expect-owner",
}


def pinned_text(how: str | None) -> str:
    """How this store came to trust a task's owner key."""
    if how is None:
        return "not pinned yet"
    return PINNED.get(how, f"pinned ({how})")


def refused_hint(task_id: str, count: int) -> str:
    """`3 refused facts from elsewhere — pitstop task refused T` (empty for none)."""
    if not count:
        return ""
    noun = "fact" if count == 1 else "facts"
    return f"{count} refused {noun} from elsewhere — pitstop task refused {shlex.quote(task_id)}"


def role(member: Mapping[str, Any]) -> str:
    """What a member may do: owner, member (reads and writes), reader, writer; and approver."""
    if member.get("owner"):
        kind = "owner"
    elif member.get("key") and member.get("recipient"):
        kind = "member"
    elif member.get("key"):
        kind = "writer (cannot read)"
    else:
        kind = "reader (cannot write)"
    return f"{kind}, may decide" if member.get("approver") else kind


def who_decides(roster: Mapping[str, Any]) -> str:
    """Who may decide this task's approvals, by label and fingerprint."""
    if roster.get("approvers") == "any member":
        return "any member"
    deciders = [
        f"{m['label']} ({m['fingerprint']})" for m in roster.get("members", []) if m.get("approver")
    ]
    return ", ".join(deciders) or "nobody on the roster"


def roster_lines(roster: Mapping[str, Any] | None, task_id: str, shared: bool) -> list[str]:
    """`task show`'s trust section: owner and how it is pinned, members, who may decide."""
    if roster is None:
        if shared:
            return [f"owner       {UNSIGNED}: its facts are not verified here"]
        return ["roster      none yet: it is founded, signed by you, when the task is "
                "first shared or pushed"]  # fmt: skip
    members: Sequence[Mapping[str, Any]] = roster.get("members", [])
    lines = [
        f"owner       {roster['owner']}  {pinned_text(roster.get('pinned'))}",
        f"roster      version {roster['version']}, {len(members)} member(s)",
    ]
    width = max((len(str(m["label"])) for m in members), default=0)
    for member in members:
        print_fp = member.get("fingerprint") or "no signing key"
        lines.append(f"  {member['label']:<{width}}  {print_fp:<19}  {role(member)}")
    lines.append(f"may decide  {who_decides(roster)}")
    return lines


def refused_line(row: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """One refused fact: kind, uid, who signed it, why, when."""
    uid = str(row.get("uid") or row.get("body_sha256") or "?")[:12]
    author = str(row.get("author"))
    signed = row.get("signed_by")
    if signed and author in labels:
        signed = f"{signed} ({labels[author]})"
    by = f"signed by {signed}" if signed else "unsigned"
    return f"{row.get('kind') or '?':<17} {uid}  {by}  {row.get('why')}  {row.get('seen_at')}"


def member_labels(roster: Mapping[str, Any] | None) -> dict[str, str]:
    """Signing key → label, for the keys a roster names."""
    if roster is None:
        return {}
    return {str(m["key"]): str(m["label"]) for m in roster.get("members", []) if m.get("key")}
