"""The database checked against the store's repositories: rows lost behind a checkpoint ref.

A checkpoint's commit and ref are written before its row completes, and the row itself is
committed through SQLite's WAL. A damaged or dropped WAL can lose committed rows while the
store repository keeps their commits: the task's ref then names a checkpoint number the
database no longer knows, and the next checkpoint would be handed that number again. Before a
number is allocated the ref is read (one ref file and one commit, no git process when loose)
and a number the repository already holds is refused with one line pointing at
`pitstop doctor`, which records the lost numbers (`core.engine.doctor`).
"""

from __future__ import annotations

from pathlib import Path

from core.errors import StoreError

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple


class RefAhead(NamedTuple):
    """A task whose checkpoint ref names a checkpoint newer than any of its rows."""

    task_id: str
    store_repo: Path
    commit: str
    ref_seq: int
    row_seq: int

    @property
    def line(self) -> str:
        """What was lost, in the words the refusal and `pitstop doctor` use."""
        first = self.row_seq + 1
        lost = f"@{first}" if first == self.ref_seq else f"@{first}..@{self.ref_seq}"
        return (
            f"the store's database lost checkpoint {self.task_id}{lost} that its repository "
            f"holds (ref at {self.commit[:12]})"
        )


def refuse_reused_seq(store_repo: Path, task_id: str, seq: int) -> None:
    """Refuse to allocate `seq` when the task's checkpoint ref already names it or a later one."""
    from core import snapshot

    tip = snapshot.checkpoint_ref_seqs(store_repo, task_id).get(task_id)
    if tip is not None and tip[1] >= seq:
        ahead = RefAhead(task_id, store_repo, tip[0], tip[1], seq - 1)
        raise StoreError(
            f"{ahead.line}; the checkpoint is refused so that no number is reused: "
            "run `pitstop doctor`"
        )
