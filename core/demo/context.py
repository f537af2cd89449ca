"""What every scenario builder is given: the engine, the repositories, and a clock to pin.

The demo is built through the engine a harness uses, at moments placed relative to one frozen
"now"; these helpers pin the engine's clock to each moment and the credentials the tasks name.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from core import clock
from core.demo.repos import clone_for_task
from core.engine import CheckpointRequest, Engine
from core.errors import ConflictError
from core.models import Budget, NamedVersion

# Credentials the demo tasks name; set to harmless demo values only while the demo is built so
# the manifests carry fingerprints without depending on the builder's own environment.
_DEMO_CREDENTIALS = {
    "SHOPFRONT_DEPLOY_TOKEN": "demo-deploy-token-not-a-secret",
    "INVOICER_DATABASE_URL": "postgresql://demo:demo@localhost:5432/invoicer_demo",
}


@contextmanager
def as_of(moment: datetime) -> Iterator[None]:
    """Run engine calls as if at `moment`, by pinning the clock the engine reads."""
    previous = os.environ.get(clock.FROZEN_NOW_ENV)
    os.environ[clock.FROZEN_NOW_ENV] = clock.to_iso(moment)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(clock.FROZEN_NOW_ENV, None)
        else:
            os.environ[clock.FROZEN_NOW_ENV] = previous


@contextmanager
def demo_credentials() -> Iterator[None]:
    """Set the credentials the demo tasks name to harmless values, for the build only."""
    saved = {name: os.environ.get(name) for name in _DEMO_CREDENTIALS}
    os.environ.update(_DEMO_CREDENTIALS)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass(frozen=True)
class Demo:
    """What each task builder needs: the engine, where repos go, and the clock's anchor."""

    engine: Engine
    repos: Path
    shopfront: Path
    invoicer: Path
    now: datetime

    def ago(self, hours: float) -> datetime:
        """The moment `hours` before the demo's "now"."""
        return self.now - timedelta(hours=hours)

    def start(
        self,
        task_id: str,
        origin: Path,
        branch: str,
        hours_ago: float,
        *,
        objective: str,
        harness: NamedVersion,
        model: NamedVersion,
        budget: Budget,
        credentials: Sequence[str] = (),
    ) -> Path:
        """Clone `origin` for the task on its own branch and start the task there; the clone."""
        started = self.ago(hours_ago)
        repo = clone_for_task(origin, self.repos, task_id, branch, started)
        with as_of(started):
            self.engine.start_task(
                repo=repo,
                task_id=task_id,
                objective=objective,
                harness=harness,
                model=model,
                budget=budget,
                credentials=credentials,
            )
        return repo

    def checkpoint(self, task_id: str, hours_ago: float, request: CheckpointRequest) -> None:
        """Take a checkpoint of the task `hours_ago`; a skipped one stops the build."""
        with as_of(self.ago(hours_ago)):
            result = self.engine.checkpoint(task_id, request)
        if result.checkpoint is None:
            raise ConflictError(
                f"building the demo: checkpoint of {task_id} skipped ({result.skipped})"
            )

    def run_pytest(self, task_id: str, repo: Path, *tests: str) -> None:
        """Run the repository's own tests for real and record what they printed as evidence."""
        import importlib.util

        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]
        if importlib.util.find_spec("pytest") is None:  # an install without the test extra
            argv = [sys.executable, "-c", "import shopfront.pricing, shopfront.cart"]
        saved = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = str(repo / "src")
        try:
            with open(os.devnull, "wb") as quiet:
                self.engine.run_command(
                    task_id,
                    argv,
                    label="pytest",
                    cwd=repo,
                    out_fd=quiet.fileno(),
                    err_fd=quiet.fileno(),
                    use_pty=False,
                    timeout=120,
                )
        finally:
            if saved is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = saved
