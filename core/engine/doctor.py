"""`pitstop doctor [--fix]`: find what damage, crashes, full disks and killed writers left in a
store, say each in one line, and mend what can be mended — only when asked, each fix audited.

The database is checked first on a connection that does not migrate (a deleted migration row
or an unknown state is what keeps every other command from opening the store); the rest needs
a sound database and runs on an opened session. File modes are read before the session opens,
since opening it makes the store's own directories private again. Without `--fix` nothing in
the store changes.
"""

from __future__ import annotations

import os
import sqlite3

from core import clock
from core.engine.doctor_database import database_findings
from core.engine.doctor_effects import lost_effect_findings
from core.engine.doctor_finding import Finding
from core.engine.doctor_leftovers import leftover_findings
from core.engine.doctor_repos import mode_findings, repo_findings
from core.errors import NotFoundError, PitstopError, StoreError
from core.models import Interface
from core.paths import StorePaths, resolve_store_root
from core.session import Session
from core.store.db import open_database

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple


class DoctorReport(NamedTuple):
    """What doctor found, what it fixed (each in the words of its audit event), what remains."""

    found: tuple[Finding, ...]
    fixed: tuple[str, ...]
    remaining: tuple[Finding, ...]

    @property
    def healthy(self) -> bool:
        """True when nothing remains to fix."""
        return not self.remaining

    def as_dict(self) -> dict[str, Any]:
        """The report as `--json` shows it."""
        return {
            "healthy": self.healthy,
            "found": [finding.as_dict() for finding in self.found],
            "fixed": list(self.fixed),
            "remaining": [finding.as_dict() for finding in self.remaining],
        }


def doctor(
    store_root: str | os.PathLike[str] | None = None,
    *,
    fix: bool = False,
    interface: Interface = Interface.API,
    actor: str | None = None,
) -> DoctorReport:
    """Check the store; with `fix`, mend every finding that can be mended and check again."""
    paths = StorePaths(resolve_store_root(store_root))
    if not paths.database.is_file():
        raise NotFoundError(f"no store at {paths.root}; nothing to check (see --store)")
    found = _diagnose(paths, interface, actor, fix=False)
    if not fix or not any(finding.fix for finding in found):
        return DoctorReport(tuple(found), (), tuple(found))
    fixed = _diagnose(paths, interface, actor, fix=True)
    remaining = _diagnose(paths, interface, actor, fix=False)
    return DoctorReport(
        tuple(found), tuple(fixed_line.line for fixed_line in fixed), tuple(remaining)
    )


def _diagnose(
    paths: StorePaths, interface: Interface, actor: str | None, *, fix: bool
) -> list[Finding]:
    """The findings; with `fix`, what fixing them did instead (as findings of kind `fixed`).

    A database finding no fix mends (damage, a newer schema) stops everything: the rest would
    write into a database that cannot be trusted.
    """
    try:
        raw = open_database(paths.database)
    except StoreError as exc:  # cannot even be opened: that is the finding
        return [] if fix else [Finding("database", exc.message)]
    try:
        early = database_findings(raw)
        if any(finding.fix is None for finding in early):
            return [] if fix else early
        done = _apply(early) if fix else []
    finally:
        raw.close()
    if early and not fix:
        return early  # the rest needs a database every command can open
    modes = mode_findings(paths.root)
    done += _apply(modes) if fix else []
    session = Session(paths.root, interface=interface, actor=actor)
    try:
        later = [
            *repo_findings(session),
            *lost_effect_findings(session),
            *leftover_findings(session),
        ]
        if not fix:
            return [*modes, *later]
        done += _apply(later)
        _audit(session, done)
    finally:
        session.close()
    return [Finding("fixed", line, None, finding.task_id) for finding, line in done]


def _apply(findings: list[Finding]) -> list[tuple[Finding, str]]:
    """Run each finding's fix; one that fails is skipped (its finding remains, and is shown)."""
    done = []
    for finding in findings:
        if finding.fix is None:
            continue
        try:
            done.append((finding, finding.fix()))
        except (PitstopError, OSError, sqlite3.Error):
            continue
    return done


def _audit(session: Session, done: list[tuple[Finding, str]]) -> None:
    """One audit event per fix, in Pitstop's own words."""
    from core.store.db import write_txn

    with write_txn(session.db):
        for finding, line in done:
            session.record_event(
                finding.task_id,
                "store",
                finding.kind,
                "doctor-fix",
                None,
                None,
                line,
                clock.now_iso(),
                own_words=True,
            )
