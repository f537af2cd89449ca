"""The remote tables: named remotes, the commits that carry checkpoints, links and listings.

`core.sharing` pushes and fetches; what it needs to remember between runs (which remote, which
commit carries which checkpoint, which task went where, what a remote held last time) is kept here.
"""

from __future__ import annotations

from core.errors import ConflictError
from core.store.db import Database

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any


def add_remote(db: Database, name: str, url: str, repo_root: str, at: str) -> None:
    """Name a remote; an existing name is refused."""
    if db.execute("SELECT 1 FROM remotes WHERE name = ?", [name]).fetchone():
        raise ConflictError(
            f"a remote named {name!r} exists already; `pitstop remote remove {name}` first"
        )
    db.table("remotes").insert({"name": name, "url": url, "repo_root": repo_root, "added_at": at})


def remove_remote(db: Database, name: str) -> bool:
    """Forget a named remote; False when there was none."""
    return db.execute("DELETE FROM remotes WHERE name = ?", [name]).rowcount == 1


def get_remote(db: Database, name: str) -> dict[str, Any] | None:
    """A named remote's row, if any."""
    rows = list(db.query("SELECT * FROM remotes WHERE name = ?", [name]))
    return dict(rows[0]) if rows else None


def list_remotes(db: Database) -> list[dict[str, Any]]:
    """Every named remote, by name."""
    return [dict(row) for row in db.query("SELECT * FROM remotes ORDER BY name")]


def export_commits(db: Database, task_id: str) -> dict[int, str]:
    """The commit that carries each of a task's checkpoints to remotes: seq → commit."""
    rows = db.execute(
        "SELECT seq, commit_sha FROM remote_exports WHERE task_id = ?", [task_id]
    ).fetchall()
    return {int(seq): str(sha) for seq, sha in rows}


def record_export(db: Database, task_id: str, seq: int, commit_sha: str) -> None:
    """Remember the remote commit of a checkpoint."""
    db.execute(
        "INSERT OR REPLACE INTO remote_exports (task_id, seq, commit_sha) VALUES (?, ?, ?)",
        [task_id, seq, commit_sha],
    )


def link_remote(
    db: Database,
    task_id: str,
    url: str,
    *,
    pushed_at: str | None = None,
    fetched_at: str | None = None,
) -> None:
    """Record that a task travelled through `url` (push or fetch time)."""
    db.execute(
        "INSERT INTO remote_links (task_id, url, pushed_at, fetched_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (task_id, url) DO UPDATE SET "
        "pushed_at = COALESCE(excluded.pushed_at, pushed_at), "
        "fetched_at = COALESCE(excluded.fetched_at, fetched_at)",
        [task_id, url, pushed_at, fetched_at],
    )


def remote_links(db: Database, task_id: str | None = None) -> list[dict[str, Any]]:
    """Which tasks travel through which remotes."""
    if task_id is None:
        return [dict(row) for row in db.query("SELECT * FROM remote_links ORDER BY task_id")]
    return [
        dict(row)
        for row in db.query("SELECT * FROM remote_links WHERE task_id = ? ORDER BY url", [task_id])
    ]


def replace_listing(db: Database, url: str, rows: list[dict[str, Any]]) -> None:
    """Store the newest listing of a remote, replacing the previous one."""
    db.execute("DELETE FROM remote_listing WHERE url = ?", [url])
    if rows:
        db.table("remote_listing").insert_all([{"url": url, **row} for row in rows])


def remote_listing(db: Database) -> list[dict[str, Any]]:
    """Every remote task seen in the last listing of each remote."""
    return [dict(row) for row in db.query("SELECT * FROM remote_listing ORDER BY updated_at DESC")]
