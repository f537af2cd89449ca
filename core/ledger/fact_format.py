"""A ledger fact as bytes: canonical JSON, its uid and path, reading it back, and the union.

A fact is one small canonical JSON document (sorted keys, no spaces). Its `uid` is the sha256 of
its *plain* part: ids, states, times, counts and operator names, which is all a merge reads.
Whatever is content lives in one `sealed` field (see `core.ledger.local_facts`). A fact that is
malformed, altered or of a newer schema is refused whole, never half-read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.errors import StoreError
from core.models import ApprovalState, EffectState

SCHEMA = "pitstop.ledger/1"

EFFECT = "effect"
REQUEST = "approval-request"
DECISION = "approval-decision"
VALIDATION = "validation"
RESUME = "resume"
EVENT = "event"
KINDS = (EFFECT, REQUEST, DECISION, VALIDATION, RESUME, EVENT)

# The states a fact of each kind may record; anything else is from a newer Pitstop.
_STATES: Mapping[str, frozenset[str]] = {
    EFFECT: frozenset(state.value for state in EffectState),
    DECISION: frozenset(state.value for state in ApprovalState) - {ApprovalState.PENDING.value},
}


class LedgerFormatError(StoreError):
    """A ledger fact that is malformed, altered or of a newer schema: refused, never half-read."""


def canonical(document: Mapping[str, Any]) -> bytes:
    """A JSON document as facts are written and hashed: sorted keys, no spaces, UTF-8."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def fact_uid(plain: Mapping[str, Any]) -> str:
    """A fact's identity: the sha256 of its canonical plain part."""
    return hashlib.sha256(canonical(plain)).hexdigest()


def fact_path(uid: str) -> str:
    """Where a fact lives in the ledger tree."""
    return f"facts/{uid[:2]}/{uid}.json"


@dataclass(frozen=True)
class Fact:
    """One immutable ledger fact: its plain part (what merges read) and its sealed content."""

    uid: str
    plain: Mapping[str, Any]
    sealed: bytes | None = field(default=None, repr=False)

    @property
    def kind(self) -> str:
        """What the fact records (one of KINDS)."""
        return str(self.plain["kind"])

    def get(self, name: str) -> Any:
        """A plain field, None when absent."""
        return self.plain.get(name)


def encode_fact(plain: Mapping[str, Any], sealed: bytes | None) -> bytes:
    """The bytes of a fact file."""
    document: dict[str, Any] = dict(plain)
    document["uid"] = fact_uid(plain)
    if sealed is not None:
        document["sealed"] = base64.b64encode(sealed).decode("ascii")
    return canonical(document)


def parse_fact(path: str, data: bytes) -> Fact:
    """Read one fact file, or refuse it with a LedgerFormatError saying why."""
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LedgerFormatError(f"ledger fact {path} is not JSON ({exc}); it was altered") from exc
    if not isinstance(document, dict):
        raise LedgerFormatError(f"ledger fact {path} is not a JSON object; it was altered")
    schema = document.get("schema")
    if schema != SCHEMA:
        raise LedgerFormatError(
            f"ledger fact {path} has schema {schema!r}, not {SCHEMA!r}: it was written by a newer "
            "Pitstop; upgrade pitstop to sync this task"
        )
    uid = document.pop("uid", None)
    sealed_text = document.pop("sealed", None)
    if uid != fact_uid(document) or path != fact_path(str(uid)):
        raise LedgerFormatError(f"ledger fact {path} does not match its uid; it was altered")
    if document.get("kind") not in KINDS:
        raise LedgerFormatError(
            f"ledger fact {path} is of unknown kind {document.get('kind')!r}: it was written by "
            "a newer Pitstop; upgrade pitstop to sync this task"
        )
    states = _STATES.get(str(document["kind"]))
    if states is not None and document.get("state") not in states:
        raise LedgerFormatError(
            f"ledger fact {path} has unknown state {document.get('state')!r}: it was written by "
            "a newer Pitstop; upgrade pitstop to sync this task"
        )
    sealed = None
    if sealed_text is not None:
        try:
            sealed = base64.b64decode(str(sealed_text), validate=True)
        except binascii.Error as exc:
            raise LedgerFormatError(f"ledger fact {path} has a damaged sealed part") from exc
    return Fact(uid=str(uid), plain=document, sealed=sealed)


def parse_facts(facts: Mapping[str, bytes]) -> list[Fact]:
    """Every fact of a ledger tree, by uid."""
    return sorted((parse_fact(path, data) for path, data in facts.items()), key=lambda f: f.uid)


def merge_facts(a: Mapping[str, bytes], b: Mapping[str, bytes]) -> dict[str, bytes]:
    """The union of two ledger trees; one path with two byte strings keeps the smaller.

    The same path means the same plain part; only the sealed part's random nonce differs, so
    keeping the smaller bytes is a deterministic choice between equal contents.
    """
    merged = dict(a)
    for path, data in b.items():
        have = merged.get(path)
        merged[path] = data if have is None else min(have, data)
    return dict(sorted(merged.items()))
