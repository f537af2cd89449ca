"""The incomplete checkpoint (`bump-dependencies`): a writer killed while it wrote one.

A real child process is SIGKILLed mid-checkpoint, then the operator interrupts the task.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from core import clock
from core.demo.context import Demo
from core.demo.names import BUMP_DEPENDENCIES, DEMO_ACTOR
from core.demo.repos import replace_passage
from core.engine import CheckpointRequest
from core.errors import ConflictError
from core.models import Budget, CheckpointReason, NamedVersion


def _interrupted_writer(demo: Demo, task_id: str, hours_ago: float, note: str) -> None:
    """A harness killed (SIGKILL) while it was writing a checkpoint: a real incomplete one.

    The child process dies at the moment the checkpoint commit would be written, after the
    checkpoint was recorded as `writing`; the store must then show it as incomplete.
    """
    script = (
        "import os, signal, sys\n"
        "from core import snapshot\n"
        "from core.engine import CheckpointRequest, Engine\n"
        "from core.models import CheckpointReason, Interface\n"
        "def killed(*args, **kwargs):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "snapshot.write_checkpoint_commit = killed\n"
        "engine = Engine(sys.argv[1], interface=Interface.API, actor=sys.argv[4])\n"
        "engine.checkpoint(sys.argv[2], CheckpointRequest(reason=CheckpointReason.MILESTONE, "
        "note=sys.argv[3]))\n"
    )
    env = dict(os.environ)
    env[clock.FROZEN_NOW_ENV] = clock.to_iso(demo.ago(hours_ago))
    project_root = str(Path(__file__).resolve().parents[3])  # the checkout holding `core`
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (project_root, env.get("PYTHONPATH"))))
    result = subprocess.run(
        [sys.executable, "-c", script, str(demo.engine.paths.root), task_id, note, DEMO_ACTOR],
        env=env,
        capture_output=True,
    )
    if result.returncode != -signal.SIGKILL:
        raise ConflictError(
            "building the demo: the interrupted checkpoint writer ended with "
            f"{result.returncode}: {result.stderr.decode(errors='replace').strip()[-300:]}"
        )


def build(demo: Demo) -> None:
    """Paused: lockfile changes, a writer killed mid-checkpoint, then an operator interrupt."""
    repo = demo.start(
        BUMP_DEPENDENCIES,
        demo.invoicer,
        "chore/bump-deps",
        26,
        objective="Bump SQLAlchemy to 2.0.36 and psycopg to 3.2 and fix what breaks",
        harness=NamedVersion("codex", "0.46.0"),
        model=NamedVersion("gpt-5-codex"),
        budget=Budget(tokens=300_000, usd=4.0, minutes=90),
    )
    replace_passage(repo, "pyproject.toml", '"sqlalchemy>=2.0.29"', '"sqlalchemy>=2.0.36"')
    replace_passage(repo, "pyproject.toml", '"psycopg[binary]>=3.1.18"', '"psycopg[binary]>=3.2.3"')
    replace_passage(
        repo,
        "uv.lock",
        'name = "sqlalchemy"\nversion = "2.0.29"',
        'name = "sqlalchemy"\nversion = "2.0.36"',
    )
    replace_passage(
        repo,
        "uv.lock",
        'name = "psycopg"\nversion = "3.1.18"',
        'name = "psycopg"\nversion = "3.2.3"',
    )
    demo.checkpoint(
        BUMP_DEPENDENCIES,
        25,
        CheckpointRequest(
            reason=CheckpointReason.MILESTONE,
            note="uv lock --upgrade-package sqlalchemy --upgrade-package psycopg",
            done=("Upgrade the lockfile",),
            todo=("Run the test suite", "Fix deprecation warnings", "Open the PR"),
            tokens_used=58_000,
            usd_used=0.41,
        ),
    )
    replace_passage(
        repo,
        "src/invoicer/models.py",
        "from sqlalchemy import Numeric, String\n",
        "from sqlalchemy import Numeric, String, UniqueConstraint\n",
    )
    _interrupted_writer(demo, BUMP_DEPENDENCIES, 24.5, "Tests green on SQLAlchemy 2.0.36")
    demo.checkpoint(
        BUMP_DEPENDENCIES,
        24,
        CheckpointRequest(
            reason=CheckpointReason.INTERRUPT,
            note="Interrupted by the operator (ctrl-c) during the full test run",
            done=("Run the test suite",),
            tokens_used=131_000,
            usd_used=0.97,
        ),
    )
