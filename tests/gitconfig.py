"""An empty global git config for tests, in a temporary directory of its own.

Never `/dev/null`: run as root, a `git config --global` would replace `/dev/null` with a file.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

_DIRECTORY = Path(tempfile.mkdtemp(prefix="pitstop-test-gitconfig-"))
EMPTY_GITCONFIG = str(_DIRECTORY / "gitconfig")
Path(EMPTY_GITCONFIG).touch()
atexit.register(shutil.rmtree, _DIRECTORY, ignore_errors=True)
