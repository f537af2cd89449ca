"""A ledger fact as bytes: canonical JSON, its uid and path, its signature, reading it back,
and the union.

A fact is one small canonical JSON document (sorted keys, no spaces). Its `uid` is the sha256 of
its *plain* part: ids, states, times, counts and operator names, which is all a merge reads.
Whatever is content lives in one `sealed` field (see `core.ledger.local_facts`). Every fact is
signed: `by` names its author's public signing key and `sig` is the author's signature over the
rest of the document, bound to the task and the schema (`core.security.signing`), so the uid
says *what* a fact records and the signature *who* said so. Whether that author may say it is
`core.ledger.admission`'s question. A fact that is malformed, altered or of a newer schema is
refused whole, never half-read; one written by an older Pitstop (`pitstop.ledger/1`, unsigned)
is read as `legacy`, so it can be shown as unverified and never applied.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from core.errors import StoreError
from core.models import ApprovalState, EffectState

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, Protocol
else:
    Protocol = object  # a structural type only mypy checks

SCHEMA = "pitstop.ledger/2"
LEGACY_SCHEMA = "pitstop.ledger/1"

EFFECT = "effect"
REQUEST = "approval-request"
DECISION = "approval-decision"
VALIDATION = "validation"
RESUME = "resume"
EVENT = "event"
ROSTER = "roster"
CHECKPOINT = "checkpoint"
KINDS = (EFFECT, REQUEST, DECISION, VALIDATION, RESUME, EVENT, ROSTER, CHECKPOINT)
ROSTER_DIR = "roster/"
FACTS_DIR = "facts/"
MAX_FACT_BYTES = 1 << 20

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


def fact_path(uid: str, kind: str | None = None) -> str:
    """Where a fact lives in the ledger tree: roster changes apart, so a listing reads only them."""
    if kind == ROSTER:
        return f"{ROSTER_DIR}{uid}.json"
    return f"{FACTS_DIR}{uid[:2]}/{uid}.json"


def is_fact_path(path: str) -> bool:
    """Whether a ledger tree path holds a fact (or a roster change)."""
    return path.startswith((FACTS_DIR, ROSTER_DIR))


@dataclass(frozen=True)
class Fact:
    """One immutable ledger fact: its plain part (what merges read) and its sealed content."""

    uid: str
    plain: Mapping[str, Any]
    sealed: bytes | None = field(default=None, repr=False)
    by: str | None = None
    sig: str | None = field(default=None, repr=False)
    signed_body: bytes = field(default=b"", repr=False, compare=False)
    legacy: bool = False

    @property
    def kind(self) -> str:
        """What the fact records (one of KINDS)."""
        return str(self.plain["kind"])

    def get(self, name: str) -> Any:
        """A plain field, None when absent."""
        return self.plain.get(name)

    @property
    def path(self) -> str:
        """Where this fact lives in a ledger tree."""
        return fact_path(self.uid, self.kind)

    def signature_holds(self) -> bool:
        """Whether `sig` is `by`'s signature over this fact (False for a legacy fact)."""
        if self.legacy or not self.by or not self.sig:
            return False
        from core.security import signing

        return signing.verify(self.by, self.sig, SCHEMA, str(self.get("task")), self.signed_body)


class Signer(Protocol):
    """Who signs facts as they are written (`core.security.signing.SigningKey`)."""

    @property
    def public(self) -> str: ...

    def sign(self, schema: str, task_id: str, body: bytes) -> str: ...


def encode_fact(plain: Mapping[str, Any], sealed: bytes | None, signer: Signer) -> bytes:
    """The bytes of a fact file, signed by `signer`."""
    document: dict[str, Any] = dict(plain)
    document["uid"] = fact_uid(plain)
    if sealed is not None:
        document["sealed"] = base64.b64encode(sealed).decode("ascii")
    document["by"] = signer.public
    document["sig"] = signer.sign(SCHEMA, str(plain["task"]), canonical(document))
    return canonical(document)


def parse_fact(path: str, data: bytes) -> Fact:
    """Read one fact file, or refuse it with a LedgerFormatError saying why."""
    if len(data) > MAX_FACT_BYTES:
        raise LedgerFormatError(f"ledger fact {path} is over {MAX_FACT_BYTES} bytes; refused")
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LedgerFormatError(f"ledger fact {path} is not JSON ({exc}); it was altered") from exc
    if not isinstance(document, dict):
        raise LedgerFormatError(f"ledger fact {path} is not a JSON object; it was altered")
    schema = document.get("schema")
    if schema == LEGACY_SCHEMA:
        return _legacy_fact(path, document)
    if schema != SCHEMA:
        raise LedgerFormatError(
            f"ledger fact {path} has schema {schema!r}, not {SCHEMA!r}: it was written by a newer "
            "Pitstop; upgrade pitstop to sync this task"
        )
    sig = document.pop("sig", None)
    signed_body = canonical(document)
    by = document.pop("by", None)
    uid = document.pop("uid", None)
    sealed_text = document.pop("sealed", None)
    if uid != fact_uid(document) or path != fact_path(str(uid), str(document.get("kind"))):
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
    if not isinstance(by, str) or not isinstance(sig, str):
        raise LedgerFormatError(f"ledger fact {path} is not signed; it was altered")
    return Fact(
        uid=str(uid),
        plain=document,
        sealed=_sealed_bytes(path, sealed_text),
        by=by,
        sig=sig,
        signed_body=signed_body,
    )


def _sealed_bytes(path: str, sealed_text: Any) -> bytes | None:
    if sealed_text is None:
        return None
    try:
        return base64.b64decode(str(sealed_text), validate=True)
    except binascii.Error as exc:
        raise LedgerFormatError(f"ledger fact {path} has a damaged sealed part") from exc


def _legacy_fact(path: str, document: dict[str, Any]) -> Fact:
    """A fact of an older, unsigned Pitstop: read to be shown as unverified, never applied."""
    uid = document.pop("uid", None)
    sealed_text = document.pop("sealed", None)
    if uid != fact_uid(document) or path != fact_path(str(uid)):
        raise LedgerFormatError(f"ledger fact {path} does not match its uid; it was altered")
    return Fact(uid=str(uid), plain=document, sealed=_sealed_bytes(path, sealed_text), legacy=True)


def parse_facts(facts: Mapping[str, bytes]) -> list[Fact]:
    """Every fact of a ledger tree, by uid (any malformed one refuses the whole tree)."""
    return sorted((parse_fact(path, data) for path, data in facts.items()), key=lambda f: f.uid)


def parse_each(facts: Mapping[str, bytes]) -> tuple[list[Fact], list[tuple[str, str]]]:
    """Every readable fact of a tree, and (path, why) for each one refused: one bad fact from a
    remote never stops the others."""
    parsed: list[Fact] = []
    refused: list[tuple[str, str]] = []
    for path, data in sorted(facts.items()):
        try:
            parsed.append(parse_fact(path, data))
        except LedgerFormatError as exc:
            refused.append((path, str(exc)))
    return sorted(parsed, key=lambda f: f.uid), refused


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
