"""The threads of one recording, joined by bounded queues: hand-offs, batching and stopping.

A recording's stages (redaction, compression, storage) each run on a thread of their own and pass
work on through small queues, so memory stays bounded and a slow stage slows the reads instead of
growing a buffer. What they share is here: waiting for room or work without missing a stop, taking
whatever else is waiting as one batch (a stage that fell behind catches up in fewer, larger
steps), and carrying the first failure to the caller's thread.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

_Item = TypeVar("_Item")

POLL_SECONDS = 0.05
"""How often a stage waiting on a queue looks whether the recording was stopped."""


class Stopped(Exception):
    """Raised inside a stage to leave it: the recording was aborted or another stage failed."""


class Stages:
    """What the stages of one recording share: a stop signal and the first failure."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.failure: BaseException | None = None

    def put(self, into: queue.Queue[_Item | None], item: _Item | None) -> None:
        """Wait for room in a queue, giving up if a stage failed or the recording stopped."""
        while True:
            self.raise_failure()
            if self.stop.is_set():
                raise Stopped
            try:
                into.put(item, timeout=POLL_SECONDS)
                return
            except queue.Full:
                continue

    def get(self, source: queue.Queue[_Item | None]) -> _Item | None:
        """Wait for the next item (None: the end of the stream), giving up when stopped."""
        while True:
            if self.stop.is_set():
                raise Stopped
            try:
                return source.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue

    def batches(
        self, source: queue.Queue[_Item | None], limit: int | None = None
    ) -> Iterator[list[_Item]]:
        """Every item put into ``source`` up to its end (None), in batches: the next item and
        whatever else is already waiting (at most ``limit`` items)."""
        while (first := self.get(source)) is not None:
            batch = [first]
            ended = False
            while limit is None or len(batch) < limit:
                try:
                    more = source.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    ended = True
                    break
                batch.append(more)
            yield batch
            if ended:
                return

    def raise_failure(self) -> None:
        """Raise the error a stage failed with, if one did."""
        failure = self.failure
        if failure is not None:
            raise failure

    def fail(self, exc: BaseException) -> None:
        """Record a stage's error for the caller's thread and stop the other stages."""
        if self.failure is None:
            self.failure = exc
        self.stop.set()
