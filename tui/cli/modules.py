"""The list of command modules `pitstop` loads; each exposes `register(group)`.

Adding a capability's commands means adding its module here, not editing `tui/cli.py`.
"""

from __future__ import annotations

from collections.abc import Callable

import click

from tui.cli import econ as cli_econ
from tui.cli import evidence as cli_evidence
from tui.cli import hooks as cli_hooks
from tui.cli import identity as cli_identity
from tui.cli import ledger as cli_ledger
from tui.cli import redact as cli_redact
from tui.cli import remote as cli_remote
from tui.cli import resume as cli_resume

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
