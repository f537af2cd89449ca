"""Rate limits on what a stranger can try: pairing links and unpaired requests.

A pairing token is 256 random bits, so guessing is hopeless anyway; the limit keeps a flood
from costing the store a write per attempt and makes probing visible. Counted per client
address in the server's memory: a restart forgets them, which only helps the next stranger
for one window.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import NamedTuple


class RateLimits(NamedTuple):
    """How many attempts each client gets per window."""

    pairing_attempts: int = 10
    failed_requests: int = 30
    window_s: float = 600.0


class Limiter:
    """At most `limit` hits per key within a sliding window of `window_s` seconds."""

    def __init__(self, limit: int, window_s: float) -> None:
        self.limit = limit
        self.window_s = window_s
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, key: str, now: float) -> deque[float]:
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - self.window_s:
            hits.popleft()
        return hits

    def exhausted(self, key: str) -> bool:
        """True when `key` used up its attempts for now."""
        with self._lock:
            return len(self._recent(key, time.monotonic())) >= self.limit

    def hit(self, key: str) -> bool:
        """Count one attempt; False when it is one too many (and then it is not counted)."""
        with self._lock:
            now = time.monotonic()
            hits = self._recent(key, now)
            if len(hits) >= self.limit:
                return False
            hits.append(now)
            return True
