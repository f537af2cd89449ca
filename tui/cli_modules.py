"""The list of command modules `pitstop` loads; each exposes `register(group)`.

Adding a capability's commands means adding its module here, not editing `tui/cli.py`.
"""

from __future__ import annotations

from collections.abc import Callable

import click

from tui import (
    cli_econ,
    cli_evidence,
    cli_hooks,
    cli_identity,
    cli_ledger,
    cli_redact,
    cli_remote,
    cli_resume,
)

REGISTRARS: list[Callable[[click.Group], None]] = [
    cli_evidence.register,
    cli_ledger.register,
    cli_econ.register,
    cli_resume.register,
    cli_redact.register,
    cli_hooks.register,
    cli_identity.register,
    cli_remote.register,
]
