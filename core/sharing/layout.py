"""What a Pitstop remote holds and where: its refs, file names and schemas (DESIGN §6).

Written down once so that push, fetch and listing agree on every name. Two refs per task:

- `refs/pitstop/checkpoints/<task>`: one commit per checkpoint, its only parent the previous
  one. Its tree holds the plain `pitstop.json` header, the sealed manifest and note,
  `checkpoint.json` (plain listing facts, the base commit's id among them, the rest sealed), the
  evidence (every blob sealed), and `worktree/` + `index/` — plain source objects, as in the
  repository itself, so they share objects with it. The base commit travels as `base/` (its
  tree, sharing objects with `worktree/`) and `base.commit` (its raw bytes), never its history:
  the store holds it shallowly, and a remote refuses history reaching a shallow commit. Older
  Pitstops made the base commit the second parent instead; both are read. A checkpoint's
  remote commit is built once and remembered, so pushing twice sends nothing.
- `refs/pitstop/ledger/<task>`: append-only commits whose tree is `task.json` (plain header;
  the objective and other text sealed), `keys/data-key.age` (the task's data key encrypted with
  age to every recipient) and `facts/` (the ledger of approvals, effects, validations, resumes
  and audit events, see `core.ledger.facts`). Ledgers merge as a union of facts.

Sealed content is bound to the task's origin store (`TaskKeys.scope`), so blobs travel
unchanged and open in every store that holds the data key. A store whose operator is not a
recipient lists the task as `no key` and imports nothing of it.

Whatever a remote holds is read with a cap and checked field by field before use
(`core.sharing.remote_documents`, on the checks of `core.sharing.remote_input`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from core.sharing.remote_input import RemoteFormatError as RemoteFormatError

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

TASK_SCHEMA = "pitstop.remote-task/1"
CHECKPOINT_SCHEMA = "pitstop.remote-checkpoint/1"
TASK_FILE = "task.json"
KEY_FILE = "keys/data-key.age"
FACTS_DIR = "facts/"
CHECKPOINT_FILE = "checkpoint.json"
NOTE_FILE = "note.enc"
PACK_FILE = "snapshot.pack.enc"
BASE_TREE = "base"
BASE_COMMIT_FILE = "base.commit"
PREFIX = "refs/pitstop/"
KINDS = ("checkpoints", "ledger")


def checkpoint_ref(task_id: str) -> str:
    """The remote ref of a task's newest checkpoint."""
    return f"{PREFIX}checkpoints/{task_id}"


def ledger_ref(task_id: str) -> str:
    """The remote ref of a task's ledger."""
    return f"{PREFIX}ledger/{task_id}"


def local_ledger_ref(task_id: str) -> str:
    """The ref of a task's last ledger commit in the store's own repository."""
    return f"{PREFIX}ledger/{task_id}"


def canonical(document: Mapping[str, Any]) -> bytes:
    """A JSON document as the remote stores it: sorted keys, no spaces."""
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
