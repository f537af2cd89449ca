"""Benchmark `pitstop serve`: the inbox page with 10,000 pending approvals, and decisions per
second, each beside a static file served by the same server in the same run.

Issue 19's measures. A real `pitstop serve` process (uvicorn, as a user starts it) on a store
holding `--approvals` pending approvals spread over `--tasks` tasks; a paired client (one
keep-alive HTTP connection, the device cookie a browser would hold) then asks, interleaved:

- the inbox page `/` (every pending approval read, sorted, the first 200 rendered) against
  `/static/pitstop.css` from the same server: median latency and their ratio;
- approve decisions (`POST /approvals/ID` with the CSRF token and a reason: one `BEGIN
  IMMEDIATE` transaction, audited) against the static file: requests per second, and their ratio.

    .venv/bin/python bench/serve.py                                   # 10,000 approvals
    .venv/bin/python bench/serve.py --approvals 20 --requests 3       # a smoke run for tests
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench.snapshot import isolate_environment  # noqa: E402

CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')
STATIC = "/static/pitstop.css"


def fill_store(work: Path, approvals: int, tasks: int) -> list[str]:
    """A store with `approvals` pending approvals over `tasks` tasks; their ids, oldest first."""
    import subprocess

    from core.engine import Engine
    from core.models import Risk
    from core.store.db import batch_txn

    repo = work / "repo"
    repo.mkdir()
    for command in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "i"]):
        subprocess.run(["git", *command], cwd=repo, check=True)
    risks = (Risk.LOW, Risk.MEDIUM, Risk.HIGH)
    made: list[str] = []
    with Engine() as engine:
        task_ids = [
            engine.start_task(repo=repo, objective=f"bench task {n}", task_id=f"t{n:03d}").id
            for n in range(tasks)
        ]
        with batch_txn(engine.db):
            for n in range(approvals):
                made.append(
                    engine.request_approval(
                        task_ids[n % tasks], f"deploy preview {n} of the bench", risk=risks[n % 3]
                    ).id
                )
    return made


class Client:
    """One paired browser: a keep-alive connection and the device cookie."""

    def __init__(self, base: str) -> None:
        parts = urlsplit(base)
        self.connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
        self.cookie = ""

    def request(
        self, method: str, path: str, form: dict[str, str] | None = None
    ) -> tuple[int, str]:
        """One request; the status and the body."""
        headers = {"Cookie": self.cookie} if self.cookie else {}
        body = None
        if form is not None:
            body = "&".join(f"{quote(k)}={quote(v)}" for k, v in form.items())
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        self.connection.request(method, path, body=body, headers=headers)
        response = self.connection.getresponse()
        text = response.read().decode()
        cookie = response.getheader("set-cookie")
        if cookie:
            self.cookie = cookie.split(";", 1)[0]
        return response.status, text

    def pair(self, link: str) -> None:
        """Open the pairing link and press Pair, as a phone does."""
        path = urlsplit(link).path
        self.request("GET", path)
        status, _ = self.request("POST", "/pair", {"token": path.rsplit("/", 1)[1]})
        if status != 303 or not self.cookie:
            raise SystemExit(f"pairing failed with status {status}")


def timed(client: Client, method: str, path: str, form: dict[str, str] | None = None) -> float:
    """Seconds for one request; a refusal stops the benchmark."""
    started = time.perf_counter()
    status, text = client.request(method, path, form)
    elapsed = time.perf_counter() - started
    if status not in (200, 303):
        raise SystemExit(f"{method} {path} answered {status}: {text[:300]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--approvals", type=int, default=10_000)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--requests", type=int, default=30, help="inbox pages timed")
    parser.add_argument("--decisions", type=int, default=200, help="decisions timed")
    args = parser.parse_args(argv)
    decisions = min(args.decisions, args.approvals)
    tasks = max(1, min(args.tasks, args.approvals))

    work = Path(tempfile.mkdtemp(prefix="pitstop-bench-serve-"))
    try:
        isolate_environment(work)
        started = time.perf_counter()
        approvals = fill_store(work, args.approvals, tasks)
        print(
            f"store: {args.approvals:,} pending approvals over {tasks} tasks, "
            f"made in {time.perf_counter() - started:.1f} s"
        )
        from tests.e2e.browser import serve

        with serve(dict(os.environ), approver="bench") as served:
            client = Client(served.base)
            client.pair(served.link)
            for _ in range(3):  # warm both paths (templates, the engine of each thread)
                timed(client, "GET", "/")
                timed(client, "GET", STATIC)
            page_s: list[float] = []
            static_s: list[float] = []
            for _ in range(args.requests):
                page_s.append(timed(client, "GET", "/"))
                static_s.append(timed(client, "GET", STATIC))
            status, inbox = client.request("GET", "/")
            found = CSRF.search(inbox)
            if status != 200 or not found:
                raise SystemExit("the inbox page carries no CSRF token")
            csrf = found.group(1)
            decide_s = 0.0
            static_again_s = 0.0
            for approval_id in approvals[:decisions]:  # interleaved with the baseline
                decide_s += timed(
                    client,
                    "POST",
                    f"/approvals/{quote(approval_id, safe='')}",
                    {"csrf": csrf, "decision": "approve", "reason": "benchmarked"},
                )
                static_again_s += timed(client, "GET", STATIC)
        require_decided(approvals[:decisions])
        report(args.approvals, page_s, static_s, decisions, decide_s, static_again_s)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def require_decided(approval_ids: list[str]) -> None:
    """Stop unless every timed decision is in the store (a fast refusal would be no decision)."""
    from core.engine import Engine
    from core.models import ApprovalState

    with Engine() as engine:
        undecided = [
            a for a in approval_ids if engine.get_approval(a).state is not ApprovalState.APPROVED
        ]
    if undecided:
        raise SystemExit(f"{len(undecided)} timed decisions are not in the store")


def report(
    approvals: int,
    page_s: list[float],
    static_s: list[float],
    decisions: int,
    decide_s: float,
    static_again_s: float,
) -> None:
    """Print the medians and rates with their ratios, then one JSON line."""
    page_ms = statistics.median(page_s) * 1000
    static_ms = statistics.median(static_s) * 1000
    decide_rps = decisions / decide_s
    static_rps = decisions / static_again_s
    print(f"inbox page ({approvals:,} pending)  {page_ms:8.1f} ms median of {len(page_s)}")
    print(f"static file (baseline)       {static_ms:8.1f} ms   -> {page_ms / static_ms:.1f}x")
    print(f"decisions (approve)          {decide_rps:8.1f} req/s of {decisions}")
    print(f"static file (baseline)       {static_rps:8.1f} req/s -> {static_rps / decide_rps:.1f}x")
    print(
        json.dumps(
            {
                "approvals": approvals,
                "inbox_ms": round(page_ms, 2),
                "static_ms": round(static_ms, 2),
                "inbox_ratio": round(page_ms / static_ms, 2),
                "decisions_per_s": round(decide_rps, 1),
                "static_per_s": round(static_rps, 1),
                "decision_ratio": round(static_rps / decide_rps, 2),
            }
        )
    )


if __name__ == "__main__":
    sys.exit(main())
