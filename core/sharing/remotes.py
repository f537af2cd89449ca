"""Named remotes and where `--remote NAME|URL` points: the one place a remote's URL is decided.

A name is looked up among Pitstop's own remotes first, then taken as a URL or path, then as a
git remote of the task's repository; a git remote's relative path is anchored there, because
Pitstop runs git from its own store repository.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core import clock, snapshot, store
from core.errors import GitError, NotFoundError, UsageError
from core.git.remote_config import configured_remote_url
from core.git.run import finish_git, start_git
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

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
    with resolving_url(session, remote, repo_root) as pending:
        return pending.url(Path(repo_root))


class PendingUrl:
    """A remote's URL, known already or still being asked of git (`resolving_url`)."""

    def __init__(self, name: str, known: str | None, process: subprocess.Popen[bytes] | None):
        self.name = name
        self._known = known
        self._process = process

    def url(self, repo_root: Path) -> str:
        """The URL; a git remote's relative path is anchored at `repo_root` (the toplevel)."""
        if self._known is not None:
            return self._known
        try:
            if self._process is None:  # no repository to ask
                raise GitError("no repository")
            out = finish_git(self._process, "remote get-url")
        except GitError:
            raise UsageError(
                f"no remote {self.name!r}: not a Pitstop remote (`pitstop remote add "
                f"{self.name} URL`) and not a git remote of {repo_root}"
            ) from None
        finally:
            self._process = None
        self._known = _anchor(out.decode().strip(), repo_root)
        return self._known

    def close(self) -> None:
        """Stop a lookup nobody waited for (the caller failed first)."""
        if self._process is not None:
            self._process.kill()
            self._process.communicate()
            self._process = None


@contextmanager
def resolving_url(
    session: Session, remote: str | None, repo: str | os.PathLike[str]
) -> Iterator[PendingUrl]:
    """Resolve `--remote NAME|URL` beside the caller's own work.

    A name is looked up among Pitstop's remotes, then taken as a URL or a path, then read from
    `repo`'s config file where it says it plainly (`configured_remote_url`); only then does a
    git remote need git, whose `remote get-url` then runs while the block goes on (a
    fetch finds its repository meanwhile, a push builds its commits) and is waited for at
    `url()`. A lookup nobody waited for is stopped when the block ends.
    """
    name = remote or "origin"
    row = store.get_remote(session.db, name)
    if row is not None:
        pending = PendingUrl(name, str(row["url"]), None)
    elif _looks_like_url(name) or Path(name).exists():
        path = Path(name).expanduser()
        pending = PendingUrl(name, str(path.resolve()) if path.exists() else name, None)
    elif (configured := configured_remote_url(Path(repo), name)) is not None:
        pending = PendingUrl(name, _anchor(configured, Path(repo)), None)  # no process
    elif Path(repo).is_dir():
        process = start_git(["remote", "get-url", name], cwd=Path(repo))
        pending = PendingUrl(name, None, process)
    else:
        pending = PendingUrl(name, None, None)
    try:
        yield pending
    finally:
        pending.close()


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


def open_remote(
    session: Session, remote: str | None, repo: str | os.PathLike[str]
) -> tuple[snapshot.SourceRepo, Path, str]:
    """The source repository at `repo`, the store's repository mirroring it, and the URL of
    `--remote NAME|URL`: git finds the repository and the remote's URL side by side."""
    with resolving_url(session, remote, repo) as pending:
        source, store_repo = open_store_repo(session, repo)
        return source, store_repo, pending.url(source.toplevel)
