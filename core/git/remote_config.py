"""A git remote's URL read from the repository's config file, without a `git remote get-url`.

Every `pitstop fetch` and `push` through a git remote (`origin`) needs its URL; asking git costs
a process on every call (issue 22: a fetch started two where git's own starts one). The answer
is read here only where the files say it plainly — `[remote "NAME"]` with one `url = ...` in the
repository's own `.git/config`, and nothing anywhere that could change it: no `insteadOf`
rewriting, no `include`, no remote in the global or system config, no config in the
environment, a repository owned by the caller. Anything else, however harmless it may be, is
None, and the caller asks git, which stays the authority on what the URL is.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# Words that, anywhere in a config file git reads, could make its answer differ from ours.
_UNSAFE_WORDS = ("insteadof", "include")
# Environment that adds or moves configuration for a git process.
_CONFIG_ENV = ("GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG", "GIT_CONFIG_SYSTEM")
_SECTION = re.compile(r'\s*\[\s*remote\s+"([^"\\]*)"\s*\]\s*', re.IGNORECASE)
_URL = re.compile(r"\s*url\s*=\s*(\S(?:.*\S)?)?\s*", re.IGNORECASE)
_PLAIN_VALUE = re.compile(r"[^\"\\#;]+")


def configured_remote_url(repo: Path, name: str) -> str | None:
    """The URL of the git remote `name` of the repository whose top is `repo`, as `git remote
    get-url` would print it; None whenever the config files do not say so beyond doubt."""
    if any(var in os.environ for var in _CONFIG_ENV):
        return None
    git_dir = repo / ".git"
    try:
        if not git_dir.is_dir() or git_dir.stat().st_uid != os.getuid():
            return None  # a worktree, a `gitdir:` file, or another owner (safe.directory)
        local = (git_dir / "config").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for path in _outer_config_files():
        try:
            text = path.read_text(encoding="utf-8").lower()
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError):
            return None
        if "[remote" in text or any(word in text for word in _UNSAFE_WORDS):
            return None
    lowered = local.lower()
    if any(word in lowered for word in (*_UNSAFE_WORDS, "worktreeconfig")):
        return None
    return _url_in(local, name)


def _outer_config_files() -> list[Path]:
    """The system and global config files a git process reads before the repository's own."""
    files = []
    if "GIT_CONFIG_NOSYSTEM" not in os.environ:
        files.append(Path("/etc/gitconfig"))
    home = os.environ.get("HOME")
    xdg = os.environ.get("XDG_CONFIG_HOME") or (f"{home}/.config" if home else None)
    global_file = os.environ.get("GIT_CONFIG_GLOBAL")
    if global_file is not None:
        files.append(Path(global_file))
    else:
        files += [Path(f"{xdg}/git/config")] if xdg else []
        files += [Path(f"{home}/.gitconfig")] if home else []
    return files


def _url_in(config: str, name: str) -> str | None:
    """The one plain `url` of `[remote "name"]` in `config`; None when there is not exactly one
    (git then decides: several URLs, a quoted or escaped value, an old-style section)."""
    found: list[str] = []
    inside = False
    for line in config.splitlines():
        stripped = line.strip()
        if stripped.endswith("\\"):
            return None  # a continued value: the next line is not what it looks like
        if stripped.startswith("["):
            section = _SECTION.fullmatch(line)
            if section is None and stripped.lower().startswith("[remote"):
                return None  # `[remote.name]` or something git may read otherwise
            inside = section is not None and section.group(1) == name
            continue
        if not inside or not stripped or stripped[0] in "#;":
            continue
        if stripped.split("=", 1)[0].strip().lower() == "url":
            match = _URL.fullmatch(line)
            if match is None or not _PLAIN_VALUE.fullmatch(match.group(1) or ""):
                return None
            found.append(match.group(1))
    return found[0] if len(found) == 1 else None
