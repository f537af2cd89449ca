"""Notice when another process (an agent, the CLI, the dashboard) commits to the store.

watchfiles sees SQLite commits only through the database's `-wal` file (DESIGN §9), and also
fires for writes that change nothing another connection could see (a WAL checkpoint folding
pages back into the main file). So a file event is only a hint: the check is `PRAGMA
data_version` on a connection the watcher keeps for itself, which changes exactly when some
other connection committed. The dashboard runs this in a thread worker (through
`Engine.watch_commits`) and re-reads the store once per change.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import watchfiles

from core.store.db import data_version, open_database

# Group file events for at most this long, yielding once nothing changed for `STEP_MS`: well
# within the one second an operator should wait to see an agent's write.
DEBOUNCE_MS = 300
STEP_MS = 40
# File events can be missed (a commit whose WAL write landed while the watch was arming, or one
# coalesced away); when none came for this long the version is checked anyway, so a change is
# never shown later than this. One PRAGMA a second on a connection of the watcher's own.
RECHECK_MS = 1000


def _database_filter(database: Path) -> watchfiles.BaseFilter:
    """Accept only events on the database file and its write-ahead log."""
    names = {database.name, f"{database.name}-wal"}

    class DatabaseFilter(watchfiles.BaseFilter):
        def __call__(self, change: watchfiles.Change, path: str) -> bool:
            return Path(path).name in names

    return DatabaseFilter()


def store_commits(database: Path, stop: threading.Event, *, armed: bool = False) -> Iterator[int]:
    """Yield the new `data_version` after each commit another connection makes, until `stop`.

    Blocks between commits; meant for a thread worker. The first version is read before the
    watch starts, and it is checked again at least every `RECHECK_MS` without any file event,
    so a commit made while the watcher arms (or whose event was lost) is still reported.

    A commit made before that first read is no change to this connection, so a caller that
    read the store before calling would never hear of it. With `armed`, the first version is
    yielded at once, after it is read: the caller reads again then, and from there on misses
    nothing (a permission hook whose approval was decided while it started to wait).
    """
    db = open_database(database)
    try:
        seen = data_version(db)
        if armed:
            yield seen
        for _changes in watchfiles.watch(
            database.parent,
            watch_filter=_database_filter(database),
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            stop_event=stop,
            rust_timeout=RECHECK_MS,
            yield_on_timeout=True,
            recursive=False,
            raise_interrupt=False,
        ):
            if stop.is_set():
                return
            current = data_version(db)
            if current != seen:
                seen = current
                yield current
    finally:
        db.close()
