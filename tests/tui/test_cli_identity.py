"""`pitstop key init|show|status` and task recipients through the real command line.

Real processes, a real store, real age and ssh keys. The OS keyring is the one stand-in: a JSON
file behind keyring's own plug-in interface (tests/tui/keyring_file.py), because a headless test
machine has no Secret Service.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyrage
import pytest

from core.security import signing
from tests.gitconfig import EMPTY_GITCONFIG

HERE = Path(__file__).resolve().parent


def new_identity() -> tuple[str, str]:
    """A fresh age identity: (secret, recipient)."""
    made = pyrage.x25519.Identity.generate()
    return str(made), str(made.to_public())


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """Private store and config, a fresh master key, no identity and the null keyring."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PITSTOP_"))}
    base.update(
        {
            "PITSTOP_HOME": str(tmp_path / "store"),
            "PITSTOP_CONFIG_DIR": str(tmp_path / "config"),
            "PITSTOP_KEY": base64.b64encode(os.urandom(32)).decode(),
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


@pytest.fixture
def file_keyring(env: dict[str, str], tmp_path: Path) -> Path:
    """Point `pitstop` at a keyring that keeps secrets (the JSON stand-in); return its file."""
    path = tmp_path / "keyring.json"
    env["PYTHON_KEYRING_BACKEND"] = "keyring_file.JsonFileKeyring"
    env["TEST_KEYRING_FILE"] = str(path)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    del env["PITSTOP_KEY"]
    return path


@pytest.fixture
def repo(tmp_path: Path, env: dict[str, str]) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)
    return path


def pitstop(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args], env=env, capture_output=True, check=False
    )


def ok(env: dict[str, str], *args: str) -> str:
    result = pitstop(env, *args)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout.decode()


def ok_json(env: dict[str, str], *args: str) -> Any:
    return json.loads(ok(env, *args, "--json"))


def one_line_error(result: subprocess.CompletedProcess[bytes], exit_code: int) -> str:
    text = result.stderr.decode()
    assert result.returncode == exit_code, (result.returncode, text)
    assert "Traceback" not in text, text
    lines = text.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pitstop: "), text
    return lines[0]


def exports(printed: str) -> dict[str, str]:
    """The `export NAME='value'` lines of `key init --print`, as the shell would set them."""
    found = {}
    for line in printed.splitlines():
        if line.startswith("export "):
            name, value = line.removeprefix("export ").split("=", 1)
            found[name] = value.strip("'")
        else:
            assert line.startswith("# "), line  # everything else is a shell comment
    return found


# --- keys ------------------------------------------------------------------------------------


def test_key_init_print_gives_both_secrets_ready_for_the_shell(env: dict[str, str]) -> None:
    printed = ok(env, "key", "init", "--print")
    secrets = exports(printed)
    assert set(secrets) == {"PITSTOP_KEY", "PITSTOP_IDENTITY", "PITSTOP_SIGNING_KEY"}
    assert secrets["PITSTOP_IDENTITY"].startswith("AGE-SECRET-KEY-1")
    assert secrets["PITSTOP_SIGNING_KEY"].startswith("pitstop-sign-1")
    assert 'eval "$(pitstop key init --print)"' in printed
    # Evaluated by a real shell, the lines set variables `pitstop` then uses.
    shell = subprocess.run(
        [
            "bash",
            "-c",
            printed + '\nprintf "%s\\n" "$PITSTOP_KEY" "$PITSTOP_IDENTITY" "$PITSTOP_SIGNING_KEY"',
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shell.stdout.split() == [
        secrets["PITSTOP_KEY"], secrets["PITSTOP_IDENTITY"], secrets["PITSTOP_SIGNING_KEY"]
    ]  # fmt: skip
    env.update(secrets)
    shown = ok_json(env, "key", "show")
    recipient = shown["recipient"]
    assert recipient.startswith("age1") and recipient in printed
    assert f"age recipient  {recipient}\n" in ok(env, "key", "show")
    signer = shown["signing"]
    assert shown == {
        "recipient": recipient,
        "source": "environment variable PITSTOP_IDENTITY",
        "kind": "age",
        "signing": {
            "public": signer["public"],
            "fingerprint": signer["fingerprint"],
            "source": "environment variable PITSTOP_SIGNING_KEY",
        },
        "share_command": f"pitstop task share TASK --recipient {recipient} "
        f"--signer {signer['public']} --name {shown['share_command'].split()[-1]}",
    }
    assert signer["public"] in printed and signer["fingerprint"] in printed
    document = ok_json(env, "key", "init", "--print")
    assert set(document) == {
        "key", "id", "identity", "recipient", "signing_key", "signer", "fingerprint"
    }  # fmt: skip
    assert document["identity"] != secrets["PITSTOP_IDENTITY"]


def test_key_show_without_an_identity_says_how_to_get_one(env: dict[str, str]) -> None:
    line = one_line_error(pitstop(env, "key", "show"), 1)
    assert "PITSTOP_IDENTITY" in line and "keyring" in line and "pitstop key init" in line


def test_key_show_accepts_the_users_ssh_ed25519_key(env: dict[str, str], tmp_path: Path) -> None:
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed")
    key = tmp_path / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "me@laptop", "-f", str(key)],
        check=True,
        capture_output=True,
    )
    env["PITSTOP_IDENTITY"] = str(key)
    key_type, body, _ = Path(f"{key}.pub").read_text().split()
    assert ok(env, "key", "show").startswith(f"age recipient  {key_type} {body}\n")
    shown = ok_json(env, "key", "show")
    assert shown["kind"] == "ssh" and shown["recipient"] == f"{key_type} {body}"
    # the ssh-ed25519 identity signs with itself: its public key is the signing key
    assert shown["signing"]["public"] == signing.parse_public_key(f"{key_type} {body}")
    assert shown["signing"]["source"].endswith("(signs with itself)")


def test_key_status_names_the_identity_and_its_source(env: dict[str, str]) -> None:
    human = ok(env, "key", "status")
    assert "master key" in human and "no identity: set PITSTOP_IDENTITY" in human
    assert ok_json(env, "key", "status")["identity"] is None

    secret, recipient = new_identity()
    env["PITSTOP_IDENTITY"] = secret
    human = ok(env, "key", "status")
    assert f"identity {recipient} from environment variable PITSTOP_IDENTITY" in human
    assert secret not in human
    status = ok_json(env, "key", "status")
    assert status["identity"] == {
        "recipient": recipient,
        "source": "environment variable PITSTOP_IDENTITY",
        "kind": "age",
    }

    env["PITSTOP_IDENTITY"] = "AGE-SECRET-KEY-1BROKEN"
    assert "identity unusable: PITSTOP_IDENTITY is not a valid age identity" in ok(
        env, "key", "status"
    )


def test_key_init_keeps_both_in_a_real_keyring_and_never_overwrites(
    env: dict[str, str], file_keyring: Path
) -> None:
    document = ok_json(env, "key", "init")
    assert document["stored_in"] == "keyring_file.JsonFileKeyring"
    assert len(document["id"]) == 12 and document["recipient"].startswith("age1")
    saved = file_keyring.read_text()
    assert json.loads(saved).keys() == {
        "pitstop/master-key", "pitstop/age-identity", "pitstop/signing-key"
    }  # fmt: skip

    assert ok_json(env, "key", "show")["recipient"] == document["recipient"]
    assert ok_json(env, "key", "show")["signing"]["public"] == document["signer"]
    status = ok(env, "key", "status")
    assert f"master key {document['id']} from keyring keyring_file.JsonFileKeyring" in status
    assert f"identity {document['recipient']} from keyring keyring_file.JsonFileKeyring" in status

    line = one_line_error(pitstop(env, "key", "init"), 2)
    assert "already holds a Pitstop master key and identity" in line
    assert file_keyring.read_text() == saved


def test_key_init_adds_an_identity_beside_an_existing_master_key(
    env: dict[str, str], file_keyring: Path
) -> None:
    master = base64.b64encode(os.urandom(32)).decode()
    file_keyring.write_text(json.dumps({"pitstop/master-key": master}))
    human = ok(env, "key", "init")
    assert "master key: the one already in keyring_file.JsonFileKeyring is kept" in human
    recipient = ok_json(env, "key", "show")["recipient"]
    assert f"your recipient: {recipient}" in human
    assert json.loads(file_keyring.read_text())["pitstop/master-key"] == master


def test_key_init_without_a_usable_keyring_keeps_its_clear_error(env: dict[str, str]) -> None:
    del env["PITSTOP_KEY"]
    line = one_line_error(pitstop(env, "key", "init"), 1)
    assert "keyring.backends.null" in line and "PITSTOP_KEY" in line


# --- task recipients -------------------------------------------------------------------------


def test_task_start_and_share_record_recipients(
    env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    mine_secret, mine = new_identity()
    env["PITSTOP_IDENTITY"] = mine_secret
    _, bob = new_identity()
    started = ok_json(
        env, "task", "start", "--repo", str(repo), "--objective", "x", "--id", "t1",
        "--recipient", bob,
    )  # fmt: skip
    assert started["id"] == "t1" and started["recipients"] == [bob, mine]

    _, carol = new_identity()
    carol_file = tmp_path / "carol.pub"
    carol_file.write_text(f"{carol}\n")
    shared = ok_json(env, "task", "share", "t1", "--recipient", str(carol_file), "--recipient", bob)
    assert shared == {
        "task": "t1", "recipients": [bob, mine, carol], "added": [carol], "roster": None
    }  # fmt: skip
    again = ok(env, "task", "share", "t1", "--recipient", carol)
    assert "nothing changed" in again

    shown = ok(env, "task", "show", "t1")
    assert f"recipients  {bob}\n" in shown and f"            {carol}\n" in shown
    assert ok_json(env, "task", "show", "t1")["recipients"] == [bob, mine, carol]
    audited = [e for e in ok_json(env, "log", "t1") if e["action"] == "share"]
    assert [e["to_state"] for e in audited] == [bob, mine, carol]
    assert {e["interface"] for e in audited} == {"cli"}


@pytest.mark.parametrize(
    ("recipient", "expected"),
    [
        ("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ me@host", "ssh-rsa key"),
        ("age1nope", "not a valid age recipient"),
        ("bob", "is not a key"),
    ],
)
def test_bad_recipients_are_one_line_and_change_nothing(
    env: dict[str, str], repo: Path, recipient: str, expected: str
) -> None:
    ok(env, "task", "start", "--repo", str(repo), "--objective", "x", "--id", "t1")
    before = (ok(env, "task", "show", "t1", "--json"), ok(env, "log", "t1", "--json"))
    line = one_line_error(pitstop(env, "task", "share", "t1", "--recipient", recipient), 2)
    assert expected in line
    line = one_line_error(
        pitstop(
            env, "task", "start", "--repo", str(repo), "--objective", "y", "--id", "t2",
            "--recipient", recipient,
        ),
        2,
    )  # fmt: skip
    assert expected in line
    assert (ok(env, "task", "show", "t1", "--json"), ok(env, "log", "t1", "--json")) == before
    assert [t["id"] for t in ok_json(env, "task", "list")] == ["t1"]


def test_share_needs_a_known_task_and_a_recipient(env: dict[str, str]) -> None:
    _, bob = new_identity()
    line = one_line_error(pitstop(env, "task", "share", "nope", "--recipient", bob), 2)
    assert "no task 'nope'" in line
    line = one_line_error(pitstop(env, "task", "share", "nope"), 2)
    assert "--recipient" in line
