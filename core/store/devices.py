"""The `web_pairings` and `web_devices` tables: one-time pairing links and the devices they made.

Neither table holds a secret: a pairing link's token and a device's session token are kept as
their sha256 only (both are 256 random bits, so a plain hash is enough and a stolen database
opens no door). A pairing row is used once (`used_at`), a device row is revoked, never deleted,
so `pitstop serve devices` can still say which device decided what.
"""

from __future__ import annotations

from core.models import Device
from core.store.db import Database

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    import sqlite_utils

_DEVICE_COLUMNS = "id, approver, label, created_at, last_seen_at, revoked_at"


def create_device_tables(db: sqlite_utils.Database) -> None:
    """Migration 0018_web_devices: pairing links (hashed, one use, short-lived) and devices."""
    db.execute(
        """
        CREATE TABLE web_pairings (
            token_sha256 TEXT PRIMARY KEY,
            approver TEXT NOT NULL,
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            used_at TEXT
        )
        """
    )
    db.execute(
        """
        CREATE TABLE web_devices (
            id TEXT PRIMARY KEY,
            token_sha256 TEXT NOT NULL UNIQUE,
            approver TEXT NOT NULL,
            label TEXT NOT NULL,
            created_at TEXT NOT NULL,
            last_seen_at TEXT,
            revoked_at TEXT
        )
        """
    )


def insert_pairing(
    db: Database, token_sha256: str, approver: str, created_at: str, expires_at: str
) -> None:
    """Record a new pairing link by its token's hash."""
    db["web_pairings"].insert(
        {
            "token_sha256": token_sha256,
            "approver": approver,
            "created_at": created_at,
            "expires_at": expires_at,
        }
    )


def find_pairing(db: Database, token_sha256: str) -> dict[str, Any] | None:
    """The pairing row with this token hash (used or not), or None."""
    rows = list(
        db.query(
            "SELECT approver, created_at, expires_at, used_at FROM web_pairings "
            "WHERE token_sha256 = ?",
            [token_sha256],
        )
    )
    return rows[0] if rows else None


def use_pairing(db: Database, token_sha256: str, at: str) -> bool:
    """Mark a pairing link used; False when it already was (another request won the race)."""
    cursor = db.execute(
        "UPDATE web_pairings SET used_at = ? WHERE token_sha256 = ? AND used_at IS NULL",
        [at, token_sha256],
    )
    return cursor.rowcount == 1


def insert_device(db: Database, device: Device, token_sha256: str) -> None:
    """Record a newly paired device by its session token's hash."""
    db["web_devices"].insert(
        {
            "id": device.id,
            "token_sha256": token_sha256,
            "approver": device.approver,
            "label": device.label,
            "created_at": device.created_at,
        }
    )


def _device(row: tuple[Any, ...]) -> Device:
    return Device(*row)


def device_by_token(db: Database, token_sha256: str) -> Device | None:
    """The device whose session token has this hash (revoked or not), or None."""
    row = db.execute(
        f"SELECT {_DEVICE_COLUMNS} FROM web_devices WHERE token_sha256 = ?", [token_sha256]
    ).fetchone()
    return _device(row) if row else None


def get_device(db: Database, device_id: str) -> Device | None:
    """One device by id, or None."""
    row = db.execute(
        f"SELECT {_DEVICE_COLUMNS} FROM web_devices WHERE id = ?", [device_id]
    ).fetchone()
    return _device(row) if row else None


def list_devices(db: Database) -> list[Device]:
    """Every device ever paired, oldest first."""
    rows = db.execute(
        f"SELECT {_DEVICE_COLUMNS} FROM web_devices ORDER BY created_at, id"
    ).fetchall()
    return [_device(row) for row in rows]


def revoke_device(db: Database, device_id: str, at: str) -> bool:
    """Revoke a device; False when it was already revoked."""
    cursor = db.execute(
        "UPDATE web_devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
        [at, device_id],
    )
    return cursor.rowcount == 1


def touch_device(db: Database, device_id: str, at: str) -> None:
    """Note when a device was last seen."""
    db.execute("UPDATE web_devices SET last_seen_at = ? WHERE id = ?", [at, device_id])
