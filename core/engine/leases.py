"""Resume leases: at most one resume of a task at a time, and a dead holder frees its lease.

Validation reports a live lease as a blocker and resume takes the lease, so both read it here.
A lease ends when its time runs out, when its launched holder's process is gone, or when the
resume that took it ends.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from core import clock, store
from core.errors import ResumeRefusedError
from core.models import Checkpoint
from core.session import Session
from core.store.db import write_txn


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def live_leases(session: Session, task_id: str) -> list[str]:
    """Descriptions of resume leases on the task that are still live."""
    live = []
    now = clock.now()
    host = os.uname().nodename
    for row in store.active_resumes(session.db, task_id):
        if clock.parse(row["lease_until"]) <= now:
            continue
        if row["holder_host"] == host and row["launched"] and not pid_alive(row["holder_pid"]):
            continue
        live.append(
            f"resume {row['id']} of {task_id}@{row['seq']} by {row['actor']} "
            f"(until {row['lease_until'][:19].replace('T', ' ')} UTC)"
        )
    return live


def take_lease(session: Session, checkpoint: Checkpoint, verdict: str, target: Path) -> int:
    """Take the task's resume lease for this process (refused while another is live)."""
    from core.restore.validate import Verdict

    now = clock.now()
    until = clock.to_iso(now + timedelta(minutes=session.config.lease_minutes))
    with write_txn(session.db):
        live = live_leases(session, checkpoint.task_id)
        if live:
            raise ResumeRefusedError(
                f"{checkpoint.ref} is blocked: {live[0]} holds the lease; wait for it to "
                "finish, or release it if its holder is gone",
                Verdict.BLOCKED.exit_code,
            )
        for row in store.active_resumes(session.db, checkpoint.task_id):
            store.update_resume(
                session.db, row["id"], state="expired", finished_at=clock.to_iso(now)
            )
        resume_id = store.insert_resume(
            session.db,
            task_id=checkpoint.task_id,
            seq=checkpoint.seq,
            state="active",
            verdict=verdict,
            workdir=str(target),
            holder_pid=os.getpid(),
            holder_host=os.uname().nodename,
            lease_until=until,
            started_at=clock.to_iso(now),
            actor=session.actor,
        )
        session.record_event(
            checkpoint.task_id,
            "resume",
            str(resume_id),
            "lease",
            None,
            "active",
            None,
            clock.to_iso(now),
        )
    return resume_id


def end_resume(session: Session, resume_id: int, state: str, failure: str | None) -> None:
    """End a resume (and so its lease) as `state`; a failure is audited."""
    with write_txn(session.db):
        store.update_resume(session.db, resume_id, state=state, finished_at=clock.now_iso())
        if failure:
            session.record_event(
                None,
                "resume",
                str(resume_id),
                "fail",
                "active",
                state,
                failure,
                clock.now_iso(),
            )
