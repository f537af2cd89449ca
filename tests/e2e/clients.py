"""The real harness clients the e2e tests drive: which versions, where they live, how to get them.

Pitstop's hooks are only as right as their reading of what the real clients send, so the e2e
tests run the real Claude Code CLI, at a pinned version (a new release can change a payload; it
is taken on purpose, by changing the pin here). It comes from the npm registry, where its native
binary ships inside a platform package: nothing else is downloaded. It is installed into a cache
outside the repository (`PITSTOP_E2E_CACHE`, default `~/.cache/pitstop-e2e`), one directory per
version, so installing again is a no-op.

`.ci/run` installs it (`python3 tests/e2e/clients.py install`) and sets `PITSTOP_E2E_REQUIRE=1`:
there a missing client fails the e2e tests instead of skipping them. Elsewhere they skip with
one line saying how to install it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CLAUDE_CODE_PACKAGE = "@anthropic-ai/claude-code"
CLAUDE_CODE_VERSION = "2.1.332"
REQUIRE_VAR = "PITSTOP_E2E_REQUIRE"
INSTALL_HINT = "python3 tests/e2e/clients.py install"
# Read once, at import: the tests give every test a private HOME, the cache stays the user's.
_HOME = Path.home()


def cache_root() -> Path:
    """Where pinned clients are installed (outside the repository, never committed)."""
    configured = os.environ.get("PITSTOP_E2E_CACHE")
    return Path(configured) if configured else _HOME / ".cache" / "pitstop-e2e"


def claude_code_prefix(root: Path | None = None) -> Path:
    """The npm prefix holding the pinned Claude Code."""
    return (root or cache_root()) / f"claude-code-{CLAUDE_CODE_VERSION}"


def claude_code_binary(root: Path | None = None) -> Path:
    """The pinned `claude` executable (it may not be installed)."""
    return claude_code_prefix(root) / "node_modules" / ".bin" / "claude"


def installed_version(binary: Path) -> str | None:
    """The version `binary --version` reports, or None when it does not run."""
    try:
        out = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return out.stdout.split()[0]


def missing_reason(binary: Path) -> str | None:
    """Why the pinned client cannot be used, or None when it can."""
    if not binary.exists():
        return f"Claude Code {CLAUDE_CODE_VERSION} is not installed at {binary}; run {INSTALL_HINT}"
    version = installed_version(binary)
    if version != CLAUDE_CODE_VERSION:
        return (
            f"{binary} reports version {version or 'nothing'}, not {CLAUDE_CODE_VERSION}; "
            f"run {INSTALL_HINT}"
        )
    return None


def install_claude_code(root: Path | None = None) -> Path:
    """Install the pinned Claude Code from the npm registry (a no-op when it is there)."""
    binary = claude_code_binary(root)
    if missing_reason(binary) is None:
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is not installed: install Node.js and npm, then run this again")
    prefix = claude_code_prefix(root)
    prefix.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            npm,
            "install",
            "--prefix",
            str(prefix),
            "--no-audit",
            "--no-fund",
            "--no-save",
            f"{CLAUDE_CODE_PACKAGE}@{CLAUDE_CODE_VERSION}",
        ],
        check=True,
    )
    if missing_reason(binary) is not None:
        # The package's postinstall copies the native binary over a stub; an npm that skipped
        # install scripts left the stub, so run that step ourselves.
        script = prefix / "node_modules" / CLAUDE_CODE_PACKAGE / "install.cjs"
        subprocess.run(["node", str(script)], cwd=script.parent, check=True)
    reason = missing_reason(binary)
    if reason is not None:
        raise SystemExit(f"installing Claude Code failed: {reason}")
    return binary


def main(argv: list[str]) -> int:
    """`clients.py install` installs the pinned clients; `clients.py path` prints claude's path."""
    if argv == ["install"]:
        print(f"Claude Code {CLAUDE_CODE_VERSION}: {install_claude_code()}")
        return 0
    if argv == ["path"]:
        print(claude_code_binary())
        return 0
    print("usage: clients.py install|path", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
