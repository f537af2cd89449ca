"""The store itself: where it keeps everything, and when another connection changed it.

The dashboard's live view and `pitstop locate` ask these; neither reads a table, so they sit
apart from the use-cases.
"""

from __future__ import annotations

from collections.abc import Iterator

from core.session import Session

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    import threading


def locate(session: Session) -> dict[str, str]:
    """Where this store keeps everything."""
    from core.paths import config_dir

    return {
        "store": str(session.paths.root),
        "database": str(session.paths.database),
        "repos": str(session.paths.repos),
        "config": str(config_dir()),
    }


def watch_commits(session: Session, stop: threading.Event) -> Iterator[int]:
    """Yield the store's new data version after each commit another connection makes.

    Blocks between commits until `stop` is set; it opens its own connection, so a thread
    worker may run it while this session serves the thread that opened it.
    """
    from core.store.watch import store_commits

    return store_commits(session.paths.database, stop)
