"""Private scratch directories for a temporary index or a checkout, removed afterwards.

`tempfile.TemporaryDirectory` does the same, but loading tempfile and random costs ~2 ms in
every hook that checkpoints.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def scratch_directory(parent: Path, prefix: str) -> Iterator[Path]:
    """A new private directory under `parent`, removed when the block ends.

    Its name carries the process id (`<prefix><pid>-<hex>`), so `pitstop doctor` can tell the
    directory of a killed process from one still in use."""
    path = new_scratch_directory(parent, prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def new_scratch_directory(parent: Path, prefix: str) -> Path:
    """A new private directory `<prefix><pid>-<hex>` under `parent`; the caller removes it."""
    while True:
        path = parent / f"{prefix}{os.getpid()}-{os.urandom(6).hex()}"
        try:
            path.mkdir(mode=0o700)
            return path
        except FileExistsError:
            continue
