"""One engine per server thread, acting for the device of the request being served.

An `Engine` owns a SQLite connection and stays on the thread that opened it, and Starlette runs
blocking work on a pool of threads, so each thread opens its own once and keeps it. Before a
request's work the engine is made to act for that request's approver and device (the audit
trail's who and through what), and is set back after.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.engine import Engine
from core.models import Device, Interface


class Engines:
    """The thread-local engines of one server, all on one store, audited as `web`."""

    def __init__(self, store_root: Path | None) -> None:
        self.store_root = store_root
        self._local = threading.local()

    def current(self) -> Engine:
        """This thread's engine, opened on first use."""
        engine: Engine | None = getattr(self._local, "engine", None)
        if engine is None:
            engine = Engine(self.store_root, interface=Interface.WEB)
            self._local.engine = engine
            self._local.operator = engine.actor
        return engine

    @contextmanager
    def acting_for(self, device: Device) -> Iterator[Engine]:
        """This thread's engine acting as the device's approver, the device named in the audit."""
        engine = self.current()
        engine.actor = device.approver
        engine.audit_detail = {"device": device.id, "approver": device.approver}
        try:
            yield engine
        finally:
            engine.actor = self._local.operator
            engine.audit_detail = {}
