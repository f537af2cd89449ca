"""Private scratch directories for a temporary index or a checkout, removed afterwards.

`tempfile.TemporaryDirectory` does the same, but loading tempfile and random costs ~2 ms in
every hook that checkpoints; `shutil` (with the bz2 and lzma modules it loads) ~1 ms more, so
the directory, which holds a few files of our own, is removed here (`remove_tree`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
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
        remove_tree(path)


def new_scratch_directory(parent: Path, prefix: str) -> Path:
    """A new private directory `<prefix><pid>-<hex>` under `parent`; the caller removes it."""
    while True:
        path = parent / f"{prefix}{os.getpid()}-{os.urandom(6).hex()}"
        try:
            path.mkdir(mode=0o700)
            return path
        except FileExistsError:
            continue


def remove_tree(path: Path | str) -> None:
    """Remove a scratch directory and what is in it, as `shutil.rmtree(ignore_errors=True)`:
    a link is removed, never followed; what cannot be removed stays."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        entries = []
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            continue
    with suppress(OSError):
        os.rmdir(path)
