"""Named remotes and where `--remote NAME|URL` points: the one place a remote's URL is decided.

A name is looked up among Pitstop's own remotes first, then taken as a URL or path, then as a
git remote of the task's repository; a git remote's relative path is anchored there, because
Pitstop runs git from its own store repository.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import clock, snapshot, store
from core.errors import NotFoundError, UsageError
from core.git.run import clean_env
from core.store.db import write_txn

if TYPE_CHECKING:
    from core.session import Session


def _looks_like_url(text: str) -> bool:
    """A URL or path rather than a remote's name (git's scp-like `host:path` included)."""
    return (
        "://" in text
        or text.startswith(("/", "./", "../", "~"))
        or (":" in text.split("/", 1)[0] and not text.startswith(":"))
    )


def resolve_url(session: Session, remote: str | None, repo_root: str | Path) -> str:
    """The URL behind `--remote NAME|URL` (default: the repository's own `origin`)."""
    name = remote or "origin"
    row = store.get_remote(session.db, name)
    if row is not None:
        return str(row["url"])
    if _looks_like_url(name) or Path(name).exists():
        path = Path(name).expanduser()
        return str(path.resolve()) if path.exists() else name
    proc = subprocess.run(
        ["git", "-C", str(repo_root), "remote", "get-url", name],
        capture_output=True,
        check=False,
        env=clean_env(),
    )
    if proc.returncode != 0:
        raise UsageError(
            f"no remote {name!r}: not a Pitstop remote (`pitstop remote add {name} URL`) and "
            f"not a git remote of {repo_root}"
        )
    return _anchor(proc.stdout.decode().strip(), Path(repo_root))


def _anchor(url: str, base: Path) -> str:
    """A git remote's URL usable from anywhere: a relative local path is made absolute against
    the repository (git resolves it there; Pitstop runs git from its own store)."""
    if "://" in url or url.startswith("/"):
        return url
    head = url.split("/", 1)[0]
    if ":" in head:  # scp-like `host:path` or `user@host:path`
        return url
    return str((base / url).resolve())


def add_remote(
    session: Session, name: str, url: str, repo: str | os.PathLike[str]
) -> dict[str, Any]:
    """Name a remote for a repository (`pitstop remote add NAME URL`)."""
    if not name or not all(c.isalnum() or c in "-_." for c in name):
        raise UsageError(f"invalid remote name {name!r}: use letters, digits, '-', '_', '.'")
    if snapshot.strip_url_credentials(url) != url:
        raise UsageError(
            "the URL carries a password; keep credentials in a git credential helper, "
            "not in Pitstop's store"
        )
    source = snapshot.resolve_source_repo(repo)
    if Path(url).expanduser().exists():
        url = str(Path(url).expanduser().resolve())
    now = clock.now_iso()
    with write_txn(session.db):
        store.add_remote(session.db, name, url, str(source.toplevel), now)
        session.record_event(None, "remote", name, "add", None, None, None, now)
    return {"name": name, "url": url, "repo_root": str(source.toplevel), "added_at": now}


def remove_remote(session: Session, name: str) -> None:
    """Forget a named remote (nothing on the remote changes)."""
    now = clock.now_iso()
    with write_txn(session.db):
        if not store.remove_remote(session.db, name):
            raise NotFoundError(f"no remote named {name!r}; `pitstop remote list-names` shows them")
        session.record_event(None, "remote", name, "remove", None, None, None, now)


def open_store_repo(
    session: Session, repo: str | os.PathLike[str]
) -> tuple[snapshot.SourceRepo, Path]:
    """The source repository at `repo` and the store's own repository that mirrors it."""
    source = snapshot.resolve_source_repo(repo)
    return source, snapshot.ensure_store_repo(session.paths.repos, source)
