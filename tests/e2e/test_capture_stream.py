"""`pitstop run` end to end as a real process: secrets, exit codes, signals and huge streams.

- No secret the redactor catches reaches any byte under the store (database, WAL, git objects,
  anything) nor anything `pitstop evidence show` prints, after `pitstop run -- cat <corpus>`.
- Exit codes and signals are the command's own; Ctrl-C reaches the command.
- A large stream (64 MiB by default, 1 GiB with --full-stress) keeps memory bounded, storage
  capped and visibly truncated, and its byte count and sha256 exact.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from core.redaction.redact import redact_text
from tests.gitconfig import EMPTY_GITCONFIG

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "secrets" / "gitleaks_rule_cases.jsonl"


def fresh_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PITSTOP_"))}
    base.update(
        {
            "PITSTOP_HOME": str(tmp_path / "store"),
            "PITSTOP_CONFIG_DIR": str(tmp_path / "config"),
            "PITSTOP_KEY": fresh_key(),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
            "GIT_CONFIG_GLOBAL": EMPTY_GITCONFIG,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Test",
            "GIT_AUTHOR_EMAIL": "test@example.com",
            "GIT_COMMITTER_NAME": "Test",
            "GIT_COMMITTER_EMAIL": "test@example.com",
        }
    )
    return base


def pitstop(
    env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        env=env,
        capture_output=True,
        check=False,
        timeout=timeout,
    )


def ok(env: dict[str, str], *args: str) -> bytes:
    result = pitstop(env, *args)
    assert result.returncode == 0, (args, result.stderr)
    return result.stdout


def run_json(env: dict[str, str], *args: str) -> tuple[int, bytes, dict[str, Any]]:
    """`pitstop run --json`: (exit code, the command's own output, the evidence document)."""
    result = pitstop(env, "run", "--json", *args)
    text = result.stdout
    at = text.rindex(b'{\n  "exit_code"')
    return result.returncode, text[:at], json.loads(text[at:])


@pytest.fixture
def task(tmp_path: Path, env: dict[str, str]) -> str:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    ok(env, "task", "start", "--repo", str(repo), "--objective", "capture", "--id", "cap")
    return "cap"


# --- no secret reaches disk ------------------------------------------------------------------


def corpus_rows() -> list[dict[str, str]]:
    if not CORPUS.exists():
        pytest.fail(f"the gitleaks corpus is missing: {CORPUS} (it is part of the repository)")
    return [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def caught_secrets() -> tuple[list[str], list[str], list[str]]:
    """(secret rows, the strings the redactor replaces in them, rows it misses entirely)."""
    rows = [r["text"] for r in corpus_rows() if r["label"] == "secret"]
    strings: list[str] = []
    missed: list[str] = []
    for text in rows:
        _, findings = redact_text(text)
        if not findings:
            missed.append(text)
        strings += [text[f.start : f.end] for f in findings]
    return rows, sorted(set(strings), key=len, reverse=True), missed


def encodings(secret: str) -> list[bytes]:
    """The forms a string would take in a raw file: as is and JSON-escaped."""
    forms = {
        secret.encode(),
        json.dumps(secret)[1:-1].encode(),
        json.dumps(secret, ensure_ascii=False)[1:-1].encode(),
    }
    return sorted(forms)


def everything_stored(store: Path) -> dict[str, bytes]:
    """Raw bytes of every file under the store, plus every git object decompressed."""
    found = {str(p.relative_to(store)): p.read_bytes() for p in store.rglob("*") if p.is_file()}
    for repo in (store / "repos").glob("*.git"):
        dump = subprocess.run(
            ["git", f"--git-dir={repo}", "cat-file", "--batch-all-objects", "--batch"],
            capture_output=True,
            check=True,
        ).stdout
        found[f"{repo.name} (objects, decompressed)"] = dump
    return found


def test_redactor_recall_on_the_corpus() -> None:
    """The issue's bar: recall >= 99% on `secret` rows, <= 10% of `not_secret` rows redacted."""
    rows = corpus_rows()
    secret = [r["text"] for r in rows if r["label"] == "secret"]
    benign = [r["text"] for r in rows if r["label"] == "not_secret"]
    recall = sum(1 for t in secret if redact_text(t)[1]) / len(secret)
    noise = sum(1 for t in benign if redact_text(t)[1]) / len(benign)
    print(
        f"\nredactor: recall {recall:.1%} of {len(secret)} secret rows, "
        f"{noise:.1%} of {len(benign)} not_secret rows redacted"
    )
    assert recall >= 0.99
    assert noise <= 0.10


def test_no_secret_reaches_disk_or_evidence_show(
    env: dict[str, str], task: str, tmp_path: Path
) -> None:
    rows, secrets, missed = caught_secrets()
    print(
        f"\ncorpus: {len(rows)} secret rows, {len(rows) - len(missed)} caught by redact_text, "
        f"{len(secrets)} distinct secret strings checked"
    )
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(rows) + "\n")
    # Three ways in: cat (pipe reads as the kernel delivers them), a writer that dribbles the
    # corpus in odd-sized pieces (secrets straddle reads), and `evidence add --file`.
    code, passed_through, first = run_json(env, "--task", task, "--", "cat", str(corpus))
    assert code == 0 and passed_through == corpus.read_bytes()
    assert first["evidence"]["redactions"] >= len(rows) - len(missed)
    dribble = textwrap.dedent(
        f"""
        import os, time
        data = open({str(corpus)!r}, "rb").read()
        for i in range(0, len(data), 997):
            os.write(1, data[i : i + 997])
            time.sleep(0.002)
        """
    )
    code, _, second = run_json(env, "--task", task, "--", sys.executable, "-c", dribble)
    assert code == 0
    added = json.loads(ok(env, "evidence", "add", "--task", task, "--file", str(corpus), "--json"))
    assert first["evidence"]["sha256"] == second["evidence"]["sha256"] == added["sha256"]
    ids = [first["evidence"]["id"], second["evidence"]["id"], added["id"]]
    ok(env, "checkpoint", task)  # the manifest (with the evidence index) becomes git objects

    shown = {
        "show": ok(env, "evidence", "show", str(ids[0])),
        "show --full": ok(env, "evidence", "show", str(ids[0]), "--full"),
    }
    for evidence_id in ids:
        shown[f"show {evidence_id} --json"] = ok(
            env, "evidence", "show", str(evidence_id), "--json", "--full", "--lines", "1000"
        )
    # Redacted output keeps the rest of the text: the --full output has every row's frame.
    assert b"[REDACTED:" in shown["show --full"]

    stored = everything_stored(Path(env["PITSTOP_HOME"]))
    assert any("objects" in name for name in stored)
    leaks = [
        (secret[:16], where)
        for secret in secrets
        for form in encodings(secret)
        for where, data in (*stored.items(), *shown.items())
        if form in data
    ]
    assert not leaks, f"{len(leaks)} secret(s) in clear: {leaks[:10]}"
    # The same stream redacted three ways is stored identically.
    fulls = {json.loads(shown[f"show {i} --json"])["output"] for i in ids}
    assert len(fulls) == 1
    assert fulls == {shown["show --full"].split(b"\n\n", 1)[1].decode()}


def test_a_secret_in_the_command_line_is_redacted(env: dict[str, str], task: str) -> None:
    token = "ghp_" + base64.b32encode(os.urandom(25)).decode().rstrip("=")[:36]
    code, _, document = run_json(
        env, "--task", task, "--", "sh", "-c", f"echo deploying; true --token={token}"
    )
    assert code == 0
    shown = ok(env, "evidence", "show", str(document["evidence"]["id"]), "--json")
    argv = json.loads(shown)["evidence"]["command"]["argv"]
    assert token not in json.dumps(argv) and "[REDACTED:" in argv[-1]
    assert token.encode() not in shown
    stored = everything_stored(Path(env["PITSTOP_HOME"]))
    assert not [name for name, data in stored.items() if token.encode() in data]


def test_a_secret_in_the_label_is_redacted(env: dict[str, str], task: str) -> None:
    """Labels are free text an agent writes; they are stored in plain columns and manifests."""
    token = "ghp_" + base64.b32encode(os.urandom(25)).decode().rstrip("=")[:36]
    ok(env, "run", "--task", task, "--quiet", "--label", f"push with {token}", "--", "true")
    ok(env, "checkpoint", task)
    stored = everything_stored(Path(env["PITSTOP_HOME"]))
    leaked = [name for name, data in stored.items() if token.encode() in data]
    assert not leaked, f"the label's token is in clear in {leaked}"
    assert token.encode() not in ok(env, "evidence", "list", task, "--json")


# --- binary output through the CLI ----------------------------------------------------------


def test_binary_output_round_trips_through_show_full(
    env: dict[str, str], task: str, tmp_path: Path
) -> None:
    data = bytes(range(256)) * 40 + b"\xc3\x28 bad utf-8 \xe2\x82\n\x00\x01 tail without newline"
    blob = tmp_path / "blob.bin"
    blob.write_bytes(data)
    code, passed_through, document = run_json(env, "--task", task, "--", "cat", str(blob))
    assert code == 0 and passed_through == data
    item = document["evidence"]
    assert item["bytes_total"] == len(data)
    assert item["sha256"] == hashlib.sha256(data).hexdigest()
    assert item["redactions"] == 0
    full = ok(env, "evidence", "show", str(item["id"]), "--full")
    assert full.split(b"\n\n", 1)[1] == data


# --- exit codes and signals -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "code", "fields"),
    [
        (["true"], 0, {"exit_code": 0, "signal": None, "timed_out": False}),
        (["sh", "-c", "echo failing; exit 3"], 3, {"exit_code": 3, "signal": None}),
        (["sh", "-c", "echo bye; kill -TERM $$"], 143, {"exit_code": None, "signal": 15}),
        (["sh", "-c", "echo bye; kill -KILL $$"], 137, {"exit_code": None, "signal": 9}),
        (["--timeout", "0.5", "--", "sleep", "30"], 124, {"timed_out": True}),
    ],
    ids=["exit-0", "exit-3", "sigterm", "sigkill", "timeout"],
)
def test_exit_codes_are_the_commands_own(
    env: dict[str, str], task: str, command: list[str], code: int, fields: dict[str, Any]
) -> None:
    args = (
        ["--task", task, *command]
        if command[0] == "--timeout"
        else ["--task", task, "--", *command]
    )
    started = time.monotonic()
    returncode, _, document = run_json(env, *args)
    assert returncode == code
    assert document["exit_code"] == code
    for name, value in fields.items():
        assert document["evidence"][name] == value, name
    if code == 124:
        assert time.monotonic() - started < 10
        assert document["evidence"]["signal"] == signal.SIGTERM


SIGNAL_CHILD = textwrap.dedent(
    """
    import signal, sys, time
    def on_int(signum, frame):
        print("got INT", flush=True)
        sys.exit(7)
    signal.signal(signal.SIGINT, on_int)
    print("ready", flush=True)
    time.sleep(30)
    print("not interrupted", flush=True)
    """
)


def _start_and_wait_ready(env: dict[str, str], task: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tui.cli",
            "run",
            "--task",
            task,
            "--json",
            "--",
            sys.executable,
            "-c",
            SIGNAL_CHILD,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == b"ready\n"
    time.sleep(0.1)
    return process


def test_sigint_is_forwarded_to_the_command(env: dict[str, str], task: str) -> None:
    process = _start_and_wait_ready(env, task)
    process.send_signal(signal.SIGINT)  # to pitstop only, not to its group
    out, err = process.communicate(timeout=20)
    assert process.returncode == 7, err
    assert out.startswith(b"got INT\n")
    document = json.loads(out[out.index(b"{") :])
    assert document["exit_code"] == 7
    assert document["evidence"]["exit_code"] == 7 and document["evidence"]["signal"] is None
    shown = json.loads(ok(env, "evidence", "show", str(document["evidence"]["id"]), "--json"))
    assert shown["evidence"]["tail"] == "ready\ngot INT"


def test_sigterm_to_pitstop_stops_the_command(env: dict[str, str], task: str) -> None:
    process = _start_and_wait_ready(env, task)
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=20)
    assert process.returncode == 143
    document = json.loads(out[out.index(b"{") :])
    assert document["evidence"]["signal"] == signal.SIGTERM
    assert document["evidence"]["state"] == "complete"


# --- a large stream -------------------------------------------------------------------------

GENERATOR = textwrap.dedent(
    '''
    import hashlib, sys

    def blocks(total):
        """Deterministic log-like lines with hex payloads (compresses about 2:1)."""
        produced = j = 0
        while produced < total:
            payload = hashlib.shake_128(b"pitstop-%d" % j).hexdigest(512 * 48).encode()
            block = b"".join(
                b"%010d INFO worker-%02d step done %s\\n"
                % (j * 512 + k, k % 16, payload[k * 48 : (k + 1) * 48])
                for k in range(512)
            )[: total - produced]
            produced += len(block)
            j += 1
            yield block

    if __name__ == "__main__":
        out = sys.stdout.buffer
        for block in blocks(int(sys.argv[1])):
            out.write(block)
        out.flush()
    '''
)


def _expected(total: int) -> tuple[str, list[bytes]]:
    namespace: dict[str, Any] = {"__name__": "generator"}
    exec(GENERATOR, namespace)
    sha = hashlib.sha256()
    last = b""
    for block in namespace["blocks"](total):
        sha.update(block)
        last = (last + block)[-4096:]
    return sha.hexdigest(), last.rstrip(b"\n").split(b"\n")[-5:]


@pytest.mark.stress
def _vm_hwm_kib(pid: int) -> int:
    """Peak resident memory of a running process, in KiB (0 once it has gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def test_large_stream_bounded_memory_capped_storage(
    env: dict[str, str], task: str, tmp_path: Path, full_stress: bool
) -> None:
    total = (1024 if full_stress else 64) * 1024 * 1024
    cap_mib = 4
    generator = tmp_path / "generate.py"
    generator.write_text(GENERATOR)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tui.cli",
            "run",
            "--task",
            task,
            "--cap-mib",
            str(cap_mib),
            "--json",
            "--",
            sys.executable,
            str(generator),
            str(total),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    passthrough = hashlib.sha256()
    seen = 0
    tail = b""
    # The process's own peak (VmHWM), sampled as it runs: wait4's ru_maxrss would start from
    # pytest's peak, because Linux records the forked address space's high-water mark at exec.
    peak_kib = 0
    reads = 0
    while block := process.stdout.read1(1 << 20):
        reads += 1
        if reads % 16 == 1:
            peak_kib = max(peak_kib, _vm_hwm_kib(process.pid))
        tail = (tail + block)[-4096:]
        if seen < total:
            passthrough.update(block[: total - seen])
        seen += len(block)
    peak_kib = max(peak_kib, _vm_hwm_kib(process.pid))
    _, status, _usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read() if process.stderr else b""
    assert process.returncode == 0, stderr
    peak_mib = peak_kib / 1024
    document = json.loads(tail[tail.rindex(b'{\n  "exit_code"') :])
    item = document["evidence"]

    sha, last_lines = _expected(total)
    print(
        f"\nstream {total >> 20} MiB: peak RSS {peak_mib:.1f} MiB, stored "
        f"{item['stored_bytes'] / 2**20:.2f} MiB (cap {cap_mib} MiB), "
        f"omitted {item['omitted_bytes'] / 2**20:.1f} MiB"
    )
    assert passthrough.hexdigest() == sha, "the live output was altered"
    assert item["bytes_total"] == total
    assert item["sha256"] == sha
    assert item["truncated"] is True and item["omitted_bytes"] > 0
    assert item["kept_bytes"] + item["omitted_bytes"] == total
    assert item["stored_bytes"] <= cap_mib * 2**20
    store = Path(env["PITSTOP_HOME"])
    store_size = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())
    assert store_size <= cap_mib * 2**20 + 8 * 2**20, store_size
    assert peak_mib < 100

    lines = ok(env, "evidence", "show", str(item["id"]), "--lines", "5")
    assert lines.split(b"\n\n", 1)[1].rstrip(b"\n").split(b"\n") == last_lines
    facts = lines.split(b"\n\n", 1)[0].decode()
    assert "TRUNCATED" in facts and "cap 4.0 MiB" in facts
    full = subprocess.run(
        [sys.executable, "-m", "tui.cli", "evidence", "show", str(item["id"]), "--full"],
        env=env,
        capture_output=True,
        check=True,
    )
    marker = f"[… {item['omitted_bytes']} bytes of output omitted here: over the storage cap …]"
    assert marker.encode() in full.stdout
    assert full.stdout.rstrip(b"\n").endswith(last_lines[-1])


SIGNAL_WHILE_STARTING = textwrap.dedent(
    """
    import os, signal, subprocess, sys
    from core.evidence import capture

    class SignalledAsItStarts(subprocess.Popen):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGTERM)  # before run_captured's next line runs

    subprocess.Popen = SignalledAsItStarts
    outcome = capture.run_captured(
        [sys.executable, "-c", "import time; time.sleep(5); print('not stopped')"],
        sink=lambda data: None,
        use_pty=False,
    )
    print(outcome.signal, outcome.exit_code)
    """
)


def test_a_signal_as_the_command_starts_is_passed_on_not_lost() -> None:
    """A SIGTERM that reaches `pitstop run` the moment its command started is passed on: the
    command ends by it and the outcome says so. It used to end Pitstop before its handlers
    were in place, leaving the command running on its own and nothing recorded."""
    done = subprocess.run(
        [sys.executable, "-c", SIGNAL_WHILE_STARTING],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, (done.returncode, done.stderr)  # Pitstop lived on
    assert done.stdout.split() == [str(int(signal.SIGTERM)), str(128 + signal.SIGTERM)]
