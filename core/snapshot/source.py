"""The user's repository: where it is, and what a snapshot records about it besides its files.

Pitstop never writes to the user's repository (invariant 8); this module only reads it. Every
harness hook that checkpoints starts here, so the facts are gathered in as few git processes
as git allows: one `rev-parse` for the repository's paths, HEAD and its upstream, with one
`git config` read beside it (`locate`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from core.digests import sha256_hex
from core.errors import GitError, NotAGitRepoError
from core.git.objects import EMPTY_TREE
from core.git.run import finish_git, run_git
from core.snapshot.gitpython_adapter import work_tree_of
from core.snapshot.locate_calls import (
    CONFIG_ARGS,
    REPO_FACTS,
    head_args,
    start_locate,
    take_early,
)

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

# The value types here are named tuples, not frozen dataclasses: immutable all the same, and
# defined in a fraction of the time (~1.5 ms less for every hook process that takes a snapshot).


class SourceRepo(NamedTuple):
    """A user's git work tree, located once; everything Pitstop must never write to."""

    toplevel: Path
    git_dir: Path
    common_dir: Path
    index_file: Path
    objects_dir: Path

    @property
    def store_repo_name(self) -> str:
        """A stable, readable name for this repository's bare repo inside the store."""
        digest = sha256_hex(str(self.common_dir).encode())[:12]
        slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in self.toplevel.name)
        return f"{slug[:40] or 'repo'}-{digest}.git"


class RepoFacts(NamedTuple):
    """What the manifest records about the source repository besides the snapshot."""

    remotes: tuple[tuple[str, str], ...]
    upstream: str | None
    upstream_head: str | None


class HeadFacts(NamedTuple):
    """The base commit, its tree, the branch, and the upstream branch with its head."""

    commit: str | None
    tree: str
    branch: str | None
    upstream: str | None = None
    upstream_head: str | None = None


class Located(NamedTuple):
    """A work tree located for a snapshot, with what its config and HEAD said meanwhile."""

    source: SourceRepo
    remotes: tuple[tuple[str, str], ...]
    any_upstream: bool
    head: HeadFacts | None  # None: asked again when the snapshot is taken
    # git stores changed files as they are on disk under this config (`plain_tree`); False
    # when unknown, so the snapshot takes git's own way
    plain_config: bool = False


# Each setting, and the value under which files go in as they are on disk (git's default).
_PLAIN_SETTINGS = {
    "core.autocrlf": False,
    "core.filemode": True,
    "core.symlinks": True,
    "core.ignorecase": False,
    "core.precomposeunicode": False,
}


def _path_kind(path: Path) -> str | None:
    """ "dir", "file" (anything else that exists) or None; a path the system refuses to look
    up (a name too long, a loop of links, no permission) is refused in one line."""
    import stat

    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        shown = str(path) if len(str(path)) <= 120 else f"{str(path)[:117]}..."
        raise NotAGitRepoError(
            f"{shown} cannot be looked up ({exc.strerror or exc}); "
            "pass --repo a path inside a git work tree"
        ) from exc
    return "dir" if stat.S_ISDIR(mode) else "file"


RESOLVE_ARGS = ("rev-parse", *REPO_FACTS)
"""The one git call `resolve_source_repo` makes inside a work tree (run in the directory
`resolve_directory` names; also started ahead by validation)."""


def resolve_directory(path: str | os.PathLike[str]) -> Path | None:
    """The directory `resolve_source_repo(path)` asks git in first (None: none, it refuses)."""
    candidate = Path(path).expanduser()
    kind = _path_kind(candidate)
    if kind is None:
        return None
    return candidate if kind == "dir" else candidate.parent


def resolve_source_repo(path: str | os.PathLike[str]) -> SourceRepo:
    """Locate the work tree containing `path`, refusing paths that are not inside one."""
    candidate = Path(path).expanduser()
    kind = _path_kind(candidate)
    if kind is None:
        raise NotAGitRepoError(
            f"{candidate} does not exist; pass --repo a path inside a git work tree"
        )
    if kind != "dir":
        candidate = candidate.parent
    try:
        # Inside a work tree (the common case, and every harness hook's): one git call.
        lines = run_git(RESOLVE_ARGS, cwd=candidate).decode().splitlines()
    except GitError:
        work_tree = work_tree_of(candidate)  # or explains the refusal
        lines = run_git(["rev-parse", *REPO_FACTS], cwd=work_tree).decode().splitlines()
    return _source_from(lines)


def locate(path: str | os.PathLike[str]) -> Located:
    """`resolve_source_repo`, plus the remotes and HEAD a snapshot records, from two git calls
    run side by side (`start_locate`, or the same two an entry point started earlier): the
    config, and one `rev-parse` for the repository's paths, HEAD and its upstream. Without an
    upstream, that `rev-parse` stops after HEAD's tree; the branch is then read from the
    repository's HEAD file, as git reads it."""
    candidate = Path(path).expanduser()
    kind = _path_kind(candidate)
    if kind == "file":
        candidate, kind = candidate.parent, _path_kind(candidate.parent)
    if kind != "dir":
        return Located(resolve_source_repo(path), (), False, None)  # explains the refusal
    config, facts = take_early(candidate) or start_locate(candidate)
    try:
        lines = finish_git(facts, "rev-parse", ok_codes=(0, 128)).decode().splitlines()
    finally:
        out, err = config.communicate()
    plainly_inside = len(lines) >= 5
    source = _source_from(lines) if plainly_inside else resolve_source_repo(path)  # or explains
    if config.returncode not in (0, 1):  # 1: no remote and no upstream configured
        message = err.decode(errors="replace").strip().splitlines()
        raise GitError(f"git config failed: {message[-1] if message else config.returncode}")
    remotes, any_upstream, plain = parse_config(out)
    if not plainly_inside:
        return Located(source, remotes, any_upstream, None, plain)
    head = _parse_head(lines[5:], upstream=True)
    if head is None and len(lines) == 7 and not any_upstream:  # HEAD resolved; no upstream
        head = head_without_upstream(source, commit=lines[5], tree=lines[6])
    return Located(source, remotes, any_upstream, head, plain)


def head_without_upstream(source: SourceRepo, *, commit: str, tree: str) -> HeadFacts | None:
    """HEAD's facts with the branch read from `HEAD` (`ref: refs/heads/NAME`, or an id when
    detached); None when that file says something else, or is an old-style symbolic link,
    which names its branch by where it points (asked through git later)."""
    head = source.git_dir / "HEAD"
    try:
        if head.is_symlink():
            return None
        text = head.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if text == "ref: refs/heads/.invalid":  # a reftable repository's stub: HEAD lives elsewhere
        return None
    if text.startswith("ref: "):
        return HeadFacts(commit, tree, _branch_of(text.removeprefix("ref: ").strip()))
    if text == commit:
        return HeadFacts(commit, tree, None)
    return None


def _source_from(lines: Sequence[str]) -> SourceRepo:
    toplevel, git_dir, common_dir, index_file, objects_dir = (Path(line) for line in lines[:5])
    return SourceRepo(
        toplevel=toplevel.resolve(),
        git_dir=git_dir.resolve(),
        common_dir=common_dir.resolve(),
        index_file=index_file,
        objects_dir=objects_dir.resolve(),
    )


def _parse_head(lines: Sequence[str], *, upstream: bool) -> HeadFacts | None:
    """What `head_args` printed, or None when rev-parse stopped short (unborn HEAD, no
    upstream for this branch, a gone upstream branch)."""
    if upstream and len(lines) == 5:
        commit, tree, upstream_head, ref, upstream_name = lines
        return HeadFacts(commit, tree, _branch_of(ref), upstream_name, upstream_head)
    if not upstream and len(lines) == 3:
        commit, tree, ref = lines
        return HeadFacts(commit, tree, _branch_of(ref))
    return None


def head_facts(source: SourceRepo, *, upstream: bool = False) -> HeadFacts:
    """Base commit, its tree and the branch name (with `upstream`, the upstream branch and its
    head too), in one git call; an unborn HEAD or a missing upstream asks again apart."""
    args = ["rev-parse", *head_args(upstream=upstream)]
    lines = run_git(args, cwd=source.toplevel, ok_codes=(0, 128)).decode().splitlines()
    parsed = _parse_head(lines, upstream=upstream)
    if parsed is not None:
        return parsed
    if upstream and len(lines) == 2:  # HEAD resolved, its upstream did not (none, or gone)
        head = head_facts(source)
    else:  # unborn HEAD
        ref_out = run_git(
            ["symbolic-ref", "-q", "--short", "HEAD"], cwd=source.toplevel, ok_codes=(0, 1)
        )
        head = HeadFacts(None, EMPTY_TREE, ref_out.decode().strip() or None)
    if not upstream:
        return head
    name, oid = _upstream(source)
    return HeadFacts(head.commit, head.tree, head.branch, name, oid)


def _branch_of(ref: str) -> str | None:
    return ref.removeprefix("refs/heads/") if ref != "HEAD" else None


def repo_facts(source: SourceRepo) -> RepoFacts:
    """Remotes (credentials stripped) and the upstream branch with its head, where known."""
    remotes, _any_upstream = _config_facts(source.toplevel)
    upstream, upstream_head = _upstream(source)
    return RepoFacts(remotes=remotes, upstream=upstream, upstream_head=upstream_head)


def _config_facts(cwd: Path) -> tuple[tuple[tuple[str, str], ...], bool]:
    """The remotes (credentials stripped) and whether any branch has an upstream, from one
    `git config` read (a branch without `branch.<name>.merge` has no upstream)."""
    return _parse_config_facts(run_git(CONFIG_ARGS, cwd=cwd, ok_codes=(0, 1)))


def _parse_config_facts(raw: bytes) -> tuple[tuple[tuple[str, str], ...], bool]:
    """The remotes and whether any branch has an upstream, from what `git config -z
    --get-regexp` printed for `CONFIG_ARGS`."""
    remotes, any_upstream, _plain = parse_config(raw)
    return remotes, any_upstream


def parse_config(raw: bytes) -> tuple[tuple[tuple[str, str], ...], bool, bool]:
    """What `git config -z --get-regexp` printed for `CONFIG_ARGS`: the remotes, whether
    any branch has an upstream, and whether the settings are plain (`Located.plain_config`)."""
    remotes = []
    any_upstream = False
    settings: dict[str, bool | None] = {}
    for item in raw.split(b"\0"):
        if not item:
            continue
        key, newline, value = item.decode(errors="replace").partition("\n")
        if key.startswith("remote.") and key.endswith(".url"):
            name = key.removeprefix("remote.").removesuffix(".url")
            remotes.append((name, strip_url_credentials(value)))
        elif key.startswith("branch."):
            any_upstream = True
        elif key == "core.attributesfile":
            settings[key] = None  # an attributes file of the user's: never plain
        else:  # the last value wins, as in git; a key without `=` is true
            settings[key] = _config_bool(value) if newline else True
    plain = all(settings.get(key, wanted) is wanted for key, wanted in _PLAIN_SETTINGS.items())
    return tuple(remotes), any_upstream, plain and "core.attributesfile" not in settings


def _config_bool(value: str) -> bool | None:
    """git's boolean, or None for anything else (`autocrlf=input`, a typo): not plain."""
    lowered = value.strip().lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0", ""):
        return False
    return None


def _upstream(source: SourceRepo) -> tuple[str | None, str | None]:
    """The upstream branch's short name and head, asked apart (None when there is none)."""
    upstream = (
        run_git(
            ["rev-parse", "-q", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"],
            cwd=source.toplevel,
            ok_codes=(0, 1, 128),
        )
        .decode()
        .strip()
        or None
    )
    upstream_head = _rev_parse_optional(source, "@{upstream}") if upstream else None
    return upstream, upstream_head


def _rev_parse_optional(source: SourceRepo, rev: str) -> str | None:
    out = run_git(["rev-parse", "-q", "--verify", rev], cwd=source.toplevel, ok_codes=(0, 1))
    return out.decode().strip() or None


def strip_url_credentials(url: str) -> str:
    """Drop `user:password@` from URLs that carry a scheme; ssh `git@host:` users stay."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = authority.rsplit("@", 1)[1]
    return f"{scheme}://{authority}{slash}{path}"
