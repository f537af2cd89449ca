"""Live refresh: the message the dashboard posts when another process committed to the store.

The watch itself is the engine's (`Engine.watch_commits`, in `core.store.watch`); a thread worker
posts one `StoreChanged` per real change, and a burst of commits coalesces into one message
(`can_replace`, as toolong's messages do), so the screens re-read the store once.
"""

from __future__ import annotations

from textual.message import Message


class StoreChanged(Message):
    """Something committed to the store since the screens last read it."""

    def can_replace(self, message: Message) -> bool:
        """A newer change notice says all an older, unhandled one says."""
        return isinstance(message, StoreChanged)
