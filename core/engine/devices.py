"""Paired devices of the web inbox: one-time pairing links, device sessions, revocation.

`pitstop serve` prints a pairing link for an approver; opening it on a phone makes a device
session bound to that approver. Both the link's token and the session's token are random, shown
once, and kept only as their sha256, so nothing in the store opens a door. A link expires in
minutes and works once; a revoked device is refused on its very next request, because every
request looks its token up here (no cache). Pairing and revoking are audited like any decision.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from core import clock
from core.errors import NotAllowedError, NotFoundError, UsageError
from core.models import Device
from core.session import Session
from core.store import devices as rows
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

PAIRING_MINUTES = 10.0
_TOUCH_EVERY_S = 60.0  # how stale `last_seen_at` may get: one write a minute per device at most
_LINK_REFUSED = (
    "this pairing link is unknown, already used or expired; print a new one with "
    "`pitstop serve pair --approver NAME`"
)


class Pairing(NamedTuple):
    """A pairing link's secret, shown once, and until when it works."""

    token: str
    approver: str
    expires_at: str


class PairedDevice(NamedTuple):
    """A device just paired, and its session token (shown once, kept only hashed)."""

    device: Device
    token: str


def token_hash(token: str) -> str:
    """What the store keeps of a token: its sha256, hex."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def create_pairing(session: Session, approver: str, minutes: float = PAIRING_MINUTES) -> Pairing:
    """A new one-time pairing link for `approver`, working for `minutes`; audited."""
    name = approver.strip()
    if not name or len(name) > 80 or any(ord(char) < 32 for char in name):
        raise UsageError("an approver is named by 1 to 80 printable characters: --approver NAME")
    if not 0 < minutes <= 60:
        raise UsageError("a pairing link works between a few seconds and 60 minutes")
    token = secrets.token_urlsafe(32)
    now = clock.now()
    expires_at = clock.to_iso(now + timedelta(minutes=minutes))
    with write_txn(session.db):
        rows.insert_pairing(session.db, token_hash(token), name, clock.to_iso(now), expires_at)
        session.record_event(
            None,
            "device",
            "pairing",
            "pairing_link",
            None,
            None,
            None,
            clock.to_iso(now),
            detail={"approver": name, "expires_at": expires_at},
        )
    return Pairing(token, name, expires_at)


def redeem_pairing(session: Session, token: str, label: str) -> PairedDevice:
    """Turn a pairing link into a device session, once; an unknown, used or expired link is
    refused with one message that does not say which."""
    digest = token_hash(token)
    now = clock.now_iso()
    with write_txn(session.db):
        pairing = rows.find_pairing(session.db, digest)
        if pairing is None or pairing["used_at"] or pairing["expires_at"] <= now:
            raise NotAllowedError(_LINK_REFUSED)
        if not rows.use_pairing(session.db, digest, now):
            raise NotAllowedError(_LINK_REFUSED)
        device = Device(
            id=f"dev-{secrets.token_hex(4)}",
            approver=str(pairing["approver"]),
            label=_clean_label(label),
            created_at=now,
        )
        session_token = secrets.token_urlsafe(32)
        rows.insert_device(session.db, device, token_hash(session_token))
        session.record_event(
            None,
            "device",
            device.id,
            "pair",
            None,
            "active",
            None,
            now,
            detail={"approver": device.approver, "device": device.id},
        )
    return PairedDevice(device, session_token)


def _clean_label(label: str) -> str:
    printable = "".join(char for char in label if char.isprintable())
    return printable.strip()[:120] or "a browser"


def device_for_token(session: Session, token: str) -> Device | None:
    """The active device this session token belongs to, or None (unknown or revoked)."""
    if not token or len(token) > 200:
        return None
    device = rows.device_by_token(session.db, token_hash(token))
    if device is None or not device.active:
        return None
    now = clock.now()
    seen = clock.parse(device.last_seen_at) if device.last_seen_at else None
    if seen is None or (now - seen).total_seconds() > _TOUCH_EVERY_S:
        with write_txn(session.db):
            rows.touch_device(session.db, device.id, clock.to_iso(now))
    return device


def list_devices(session: Session) -> list[Device]:
    """Every device ever paired with this store, revoked ones included, oldest first."""
    return rows.list_devices(session.db)


def revoke_device(session: Session, device_id: str) -> Device:
    """Revoke a device: its next request is refused. Audited; revoking twice is an error."""
    now = clock.now_iso()
    with write_txn(session.db):
        device = rows.get_device(session.db, device_id)
        if device is None:
            raise NotFoundError(
                f"no paired device {device_id!r}; `pitstop serve devices` lists them"
            )
        if not rows.revoke_device(session.db, device_id, now):
            raise UsageError(f"device {device_id} was already revoked at {device.revoked_at}")
        session.record_event(
            None,
            "device",
            device_id,
            "revoke",
            "active",
            "revoked",
            None,
            now,
            detail={"approver": device.approver, "device": device_id},
        )
    return device._replace(revoked_at=now)
