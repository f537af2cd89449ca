"""The real harness clients the e2e tests drive: which versions, where they live, how to get them.

Pitstop's hooks are only as right as their reading of what the real clients send, so the e2e
tests run the real Claude Code and Codex CLIs, at pinned versions (a new release can change a
payload; it is taken on purpose, by changing the pin here). They come from the npm registry,
where their native binaries ship inside platform packages: nothing else is downloaded. They are
installed into a cache outside the repository (`PITSTOP_E2E_CACHE`, default
`~/.cache/pitstop-e2e`), one directory per version, so installing again is a no-op.

`.ci/run` installs them (`python3 tests/e2e/clients.py install`) and sets
`PITSTOP_E2E_REQUIRE=1`: there a missing client fails the e2e tests instead of skipping them.
Elsewhere they skip with one line saying how to install it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple


class Client(NamedTuple):
    """One harness CLI as npm publishes it."""

    name: str  # the cache directory's prefix
    package: str
    version: str
    program: str  # its executable in node_modules/.bin
    version_output: str  # what `--version` prints: `{version}` is replaced


CLAUDE_CODE = Client("claude-code", "@anthropic-ai/claude-code", "2.1.332", "claude", "{version}")
CODEX = Client("codex", "@openai/codex", "0.171.0", "codex", "codex-cli {version}")
CLIENTS = (CLAUDE_CODE, CODEX)
CLAUDE_CODE_VERSION = CLAUDE_CODE.version
REQUIRE_VAR = "PITSTOP_E2E_REQUIRE"
INSTALL_HINT = "python3 tests/e2e/clients.py install"
# Read once, at import: the tests give every test a private HOME, the cache stays the user's.
_HOME = Path.home()


def cache_root() -> Path:
    """Where pinned clients are installed (outside the repository, never committed)."""
    configured = os.environ.get("PITSTOP_E2E_CACHE")
    return Path(configured) if configured else _HOME / ".cache" / "pitstop-e2e"


def prefix(client: Client, root: Path | None = None) -> Path:
    """The npm prefix holding the pinned client."""
    return (root or cache_root()) / f"{client.name}-{client.version}"


def binary(client: Client, root: Path | None = None) -> Path:
    """The pinned client's executable (it may not be installed)."""
    return prefix(client, root) / "node_modules" / ".bin" / client.program


def installed_version(executable: Path) -> str | None:
    """What `executable --version` prints, or None when it does not run."""
    try:
        out = subprocess.run(
            [str(executable), "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return out.stdout.strip()


def missing_reason(client: Client, root: Path | None = None) -> str | None:
    """Why the pinned client cannot be used, or None when it can."""
    executable = binary(client, root)
    label = f"{client.package} {client.version}"
    if not executable.exists():
        return f"{label} is not installed at {executable}; run {INSTALL_HINT}"
    version = installed_version(executable)
    if version is None or not version.startswith(
        client.version_output.format(version=client.version)
    ):
        return f"{executable} reports {version or 'nothing'}, not {label}; run {INSTALL_HINT}"
    return None


def install(client: Client, root: Path | None = None) -> Path:
    """Install the pinned client from the npm registry (a no-op when it is there)."""
    executable = binary(client, root)
    if missing_reason(client, root) is None:
        return executable
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is not installed: install Node.js and npm, then run this again")
    target = prefix(client, root)
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            npm,
            "install",
            "--prefix",
            str(target),
            "--no-audit",
            "--no-fund",
            "--no-save",
            f"{client.package}@{client.version}",
        ],
        check=True,
    )
    script = target / "node_modules" / client.package / "install.cjs"
    if missing_reason(client, root) is not None and script.exists():
        # Claude Code's postinstall copies the native binary over a stub; an npm that skipped
        # install scripts left the stub, so run that step ourselves.
        subprocess.run(["node", str(script)], cwd=script.parent, check=True)
    reason = missing_reason(client, root)
    if reason is not None:
        raise SystemExit(f"installing {client.package} failed: {reason}")
    return executable


def main(argv: list[str]) -> int:
    """`clients.py install` installs the pinned clients; `clients.py path` prints their paths."""
    if argv == ["install"]:
        for client in CLIENTS:
            print(f"{client.package} {client.version}: {install(client)}")
        return 0
    if argv == ["path"]:
        for client in CLIENTS:
            print(binary(client))
        return 0
    print("usage: clients.py install|path", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
