"""The two git calls that locate a user's repository (`source.locate`), started as processes.

Apart from `source` so that an entry point can start them early, beside the work tree's scan
(`early_scan.start`), before the snapshot's modules load: `source.locate` takes them over
(`take_early`) when it asks about the very directory they were started in; otherwise they
are stopped with the scan (`discard_early`).
"""

from __future__ import annotations

from pathlib import Path

from core.git.run import spawn_git, stop_git

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from core.git.spawn import Spawned

REPO_FACTS = (
    "--path-format=absolute",
    "--show-toplevel",
    "--git-dir",
    "--git-common-dir",
    "--git-path",
    "index",
    "--git-path",
    "objects",
)

# The remotes and upstreams a manifest records, and the settings under which git stores a
# changed file's bytes and stat mode as they are (`plain_tree`): names as git prints them.
CONFIG_ARGS = (
    "config",
    "-z",
    "--get-regexp",
    r"^(remote\..*\.url|branch\..*\.merge"
    r"|core\.(autocrlf|filemode|symlinks|ignorecase|attributesfile|precomposeunicode))$",
)


def head_args(*, upstream: bool) -> list[str]:
    """`rev-parse` arguments for the base commit, its tree and the branch (with `upstream`,
    the upstream's head and short name too)."""
    if upstream:  # the upstream's id before the symbolic names: rev-parse has no way back
        return [
            "HEAD^{commit}",
            "HEAD^{tree}",
            "@{upstream}",
            "--symbolic-full-name",
            "HEAD",
            "--abbrev-ref",
            "@{upstream}",
        ]
    return ["HEAD^{commit}", "HEAD^{tree}", "--symbolic-full-name", "HEAD"]


def start_locate(directory: Path) -> tuple[Spawned, Spawned]:
    """The two git calls `locate` reads, started in `directory`: the config, and `rev-parse`
    for the repository's paths, HEAD and its upstream. An entry point about to checkpoint
    starts them early, beside the work tree's scan (`early_scan`)."""
    config = spawn_git(CONFIG_ARGS, cwd=directory, env={})
    try:
        facts = spawn_git(["rev-parse", *REPO_FACTS, *head_args(upstream=True)], cwd=directory)
    except BaseException:
        stop_git(config)
        raise
    return config, facts


_early: tuple[Path, Spawned, Spawned] | None = None


def start_early(directory: Path) -> None:
    """Start the two calls in `directory` for a `locate` about to come."""
    global _early
    discard_early()
    _early = (directory, *start_locate(directory))


def take_early(
    directory: Path,
) -> tuple[Spawned, Spawned] | None:
    """The calls started early in `directory`, handed over (None: none, or elsewhere)."""
    global _early
    if _early is None or _early[0] != directory:
        return None
    _, config, facts = _early
    _early = None
    return config, facts


def discard_early() -> None:
    """Stop the early calls nobody took."""
    global _early
    early, _early = _early, None
    for process in early[1:] if early else ():
        stop_git(process)
