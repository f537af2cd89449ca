"""Nothing in the tree points git's global config at /dev/null (DESIGN §9).

Run as root, any `git config --global …` with the global config set to /dev/null replaces the
device with a regular file (git writes `/dev/null.lock` and renames it over), and every later
program on the machine that writes to /dev/null fills a file instead. Tests, the demo and the
benches use an empty file in a temporary directory of their own.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from core.demo.repos import git as demo_git

ROOT = Path(__file__).resolve().parent.parent
_NULL = "/dev/" + "null"  # spelled apart so this file does not match itself
# The variable given /dev/null or os.devnull: `=`, `: "…"`, `, …` (setenv), `str(…)`.
_HAZARD = re.compile(
    r"GIT_CONFIG_GLOBAL['\"]?\]?\s*[=:,]\s*(?:str\()?\s*['\"`]?(?:"
    + re.escape(_NULL)
    + r"|os\.devnull)"
)
# A line of prose that warns against the setting rather than describing it as what we do.
_WARNING = re.compile(r"\b(?:never|replaces|instead|not)\b", re.IGNORECASE)
_TEXT_SUFFIXES = {".py", ".sh", ".toml", ".cfg", ".ini", ".yml", ".yaml", ".json", ".md", ""}


def _tracked_files() -> list[Path]:
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    names = [name for name in listing.decode().split("\0") if name]
    return [ROOT / name for name in names if Path(name).suffix in _TEXT_SUFFIXES]


def hazards(paths: list[Path]) -> list[str]:
    """`path:line: text` for every line that sets git's global config to /dev/null."""
    found = []
    for path in paths:
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if not _HAZARD.search(line):
                continue
            if path.suffix == ".md" and _WARNING.search(line):
                continue
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            found.append(f"{shown}:{number}: {line.strip()}")
    return found


def test_no_test_demo_or_bench_points_the_global_git_config_at_dev_null() -> None:
    assert hazards(_tracked_files()) == []


def test_the_check_finds_each_way_of_writing_it(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        f'env["GIT_CONFIG_GLOBAL"] = "{_NULL}"\n'
        'monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.' + "devnull)\n"
        f'env = {{"GIT_CONFIG_GLOBAL": str("{_NULL}")}}\n'
        f"export GIT_CONFIG_GLOBAL={_NULL}\n"
        'env["GIT_CONFIG_GLOBAL"] = str(tmp / "gitconfig")\n'
    )
    assert len(hazards([planted])) == 4


def _global_config_write_keeps_dev_null(env: dict[str, str], cwd: Path) -> None:
    """`git config --global` under `env` writes a file of its own, and /dev/null stays a device."""
    where = subprocess.run(
        ["git", "config", "--global", "--list", "--show-origin"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    assert _NULL not in where.stdout
    config = Path(env["GIT_CONFIG_GLOBAL"])
    before = config.read_bytes() if config.exists() else None
    try:
        subprocess.run(
            ["git", "config", "--global", "pitstop-test.probe", "1"], cwd=cwd, env=env, check=True
        )
        assert stat.S_ISCHR(os.stat(_NULL).st_mode), f"{_NULL} is no longer a device"
        assert "probe = 1" in config.read_text()
    finally:
        if before is None:
            config.unlink(missing_ok=True)
        else:
            config.write_bytes(before)


def test_the_suites_git_config_leaves_dev_null_a_device(tmp_path: Path) -> None:
    """As root (this machine's CI) this is the hazard itself; as anyone else git would fail."""
    _global_config_write_keeps_dev_null(dict(os.environ), tmp_path)


def test_the_demos_git_config_leaves_dev_null_a_device(tmp_path: Path) -> None:
    repo = tmp_path / "demo" / "shopfront"
    repo.mkdir(parents=True)
    demo_git(repo, "init", "-q", when=datetime(2026, 1, 1, tzinfo=UTC))
    demo_git(repo, "config", "--global", "pitstop-test.probe", "1", when=datetime.now(UTC))
    assert stat.S_ISCHR(os.stat(_NULL).st_mode), f"{_NULL} is no longer a device"
    assert "probe = 1" in (repo.parent / ".demo-gitconfig").read_text()
