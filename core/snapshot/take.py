"""Taking a snapshot: the exact work tree and staged state of a source repository, written
into the store's own repository.

git runs in the user's work tree with a temporary index copied from the user's (so stat data
lets it rehash only changed files), `GIT_OBJECT_DIRECTORY` pointing at the store's objects and
the user's objects as an alternate: nothing is written into the user's `.git` (invariant 8).
Afterwards every object the snapshot needs that still lives only in the user's repository is
copied into the store. Every hook checkpoint runs this, so its git processes are counted
(`tests/core/test_snapshot_processes.py`). What the snapshot writes itself (blobs, trees,
sealed stand-ins) is one pack when it is done (`pack_writer.batched`), not a file per object.

Files that hold a secret never reach git here: an untracked one is left out, a changed or staged
tracked one is given to the trees as its sealed stand-in (`core.snapshot.sealed_files`), so the
store's objects never hold it in clear. That costs git processes only when a secret is found.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import core.snapshot.early_scan as early_scan
import core.snapshot.store_repos as store_repos
from core.errors import GitError, UsageError
from core.git.objects import GITLINK_MODE
from core.git.pack_writer import batched
from core.git.reader import in_session, session_reader
from core.git.run import finish_git, run_git, spawn_git
from core.models import LeftOut
from core.snapshot.lockfiles import lockfiles_after
from core.snapshot.plain_tree import NotPlain, beyond_a_link, plain_repository
from core.snapshot.plain_tree import worktree_tree as plain_worktree_tree
from core.snapshot.scan_cache import CleanScans
from core.snapshot.scratch import scratch_directory
from core.snapshot.sealed_files import (
    WORKTREE,
    AllowedSecret,
    SealedFile,
    Sealing,
    put_stand_ins,
    seal_candidates,
)
from core.snapshot.selection import (
    DEFAULT_LIMITS,
    STATUS_ARGS,
    Scanner,
    SnapshotLimits,
    StatusScan,
    parse_status,
    select_paths,
)
from core.snapshot.source import HeadFacts, Located, RepoFacts, SourceRepo, head_facts
from core.snapshot.staged import staged_to_seal
from core.snapshot.staged_tree import index_key, remember, remembered_tree

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

if TYPE_CHECKING:
    from core.git.spawn import Spawned


class Snapshot(NamedTuple):
    """The trees of one snapshot, now held entirely by the store's repository."""

    worktree_tree: str
    index_tree: str
    base_commit: str | None
    branch: str | None
    left_out: tuple[LeftOut, ...]
    submodules: tuple[tuple[str, str], ...]
    bytes_added: int
    base_tree: str | None = None  # the base commit's tree (EMPTY_TREE without one)
    facts: RepoFacts | None = None  # remotes and upstream, read beside the snapshot (`locate`)
    # True when every object of both trees is known to be in the store by itself: the
    # previous trees were verified complete and each object beyond them was checked after
    # copying. The checkpoint's verification then needs no walk of the whole trees.
    objects_present: bool = False
    lockfiles: tuple[tuple[str, str], ...] | None = None  # path → blob id, when derived
    sealed: tuple[SealedFile, ...] = ()  # tracked files holding a secret, stored sealed
    allowed: tuple[AllowedSecret, ...] = ()  # files kept as they are though holding one
    # The files whose blob differs from the previous checkpoint's worktree tree (path, new id
    # or None when gone), when there was one and the diff could say: the changed files against
    # the base are then updated for these paths only (`diff.changed_files_after`).
    worktree_changes: tuple[tuple[str, str | None], ...] | None = None


class _Staged(NamedTuple):
    """What the first step of a snapshot learnt: the scan, the staged tree and HEAD."""

    scan: StatusScan
    index_tree: str
    head: HeadFacts
    facts: RepoFacts | None
    base_bytes: int  # the base history fetched now (0 when held, or asked later)
    ask_base_later: bool  # whether the store holds the base commit is asked with the copy


def take_snapshot(
    source: SourceRepo,
    store_repo: Path,
    scratch_dir: Path,
    limits: SnapshotLimits = DEFAULT_LIMITS,
    previous_trees: tuple[str, str] | None = None,
    previous_lockfiles: Mapping[str, str] | None = None,
    located: Located | None = None,
    *,
    sealing: Sealing,
) -> Snapshot:
    """Write the exact working tree and staged state of `source` into `store_repo`.

    `previous_trees` (worktree, index) of the task's last complete checkpoint, every object of
    which the caller verified the store holds, let the store skip objects it already holds and
    count only what this snapshot adds; the snapshot then knows its own objects are all present.
    `previous_lockfiles` (the lockfiles of that worktree tree) let the new tree's lockfiles be
    derived from the same diff instead of a walk of the whole tree. `located` (from `locate`)
    spares asking HEAD again and gives the snapshot the repository's remotes and upstream
    (`Snapshot.facts`); without it they are not read. `sealing` seals the tracked files found
    holding a secret and names the paths the user allowed to keep one.
    """
    held_before = store_repos.loose_objects(store_repo)  # new loose ones count as added
    clean = CleanScans(store_repo)  # contents judged clean before are not scanned again
    early = early_scan.claim(source)  # a scan an entry point started before the engine loaded
    scratch_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _scratch(scratch_dir, early) as temp, batched(store_repo) as batch:
        env = _temporary_index_env(source, store_repo, temp / "index", copied=early is not None)
        previous_index = previous_trees[1] if previous_trees else None
        staged = _scan_and_stage(source, store_repo, env, located, early, previous_index)
        chosen = select_paths(source, staged.scan, limits, sealing.allowed, clean.first_secret)
        index_tree, sealed, allowed = _seal_staged(
            source, store_repo, env, staged, sealing, clean.first_secret
        )
        worktree_sealed = seal_candidates(store_repo, chosen.to_seal, sealing)
        plain = _plain(located, source, staged.scan, temp / "index")
        worktree_tree = _write_worktree_tree(
            source, store_repo, env, index_tree, chosen.include, worktree_sealed, plain=plain
        )
        # a sealed staged file the work tree does not change is sealed in the work tree too
        taken = {*chosen.include, *(entry.path for entry in worktree_sealed)}
        worktree_sealed += [
            entry._replace(tree=WORKTREE) for entry in sealed if entry.path not in taken
        ]
        submodules = (
            _submodule_commits(source, env, worktree_tree)
            if (source.toplevel / ".gitmodules").exists()
            else []
        )
    clean.save()
    head = staged.head
    old_worktree, old_index = previous_trees or (head.tree, head.tree)
    needed, worktree_changes = store_repos.new_objects(
        store_repo, [(old_worktree, worktree_tree), (old_index, index_tree)], source
    )
    ask_base = head.commit if staged.ask_base_later else None
    copied_bytes, unstored = store_repos.copy_missing_objects(
        store_repo, source, needed, ask_base, held_before, batch.packed
    )
    lockfiles = None
    if previous_trees and previous_lockfiles is not None and worktree_changes is not None:
        lockfiles = lockfiles_after(previous_lockfiles, worktree_changes)
    return Snapshot(
        worktree_tree=worktree_tree,
        index_tree=index_tree,
        base_commit=head.commit,
        branch=head.branch,
        left_out=tuple(chosen.left_out),
        submodules=tuple(submodules),
        bytes_added=staged.base_bytes + copied_bytes + batch.written,
        base_tree=head.tree,
        facts=staged.facts,
        objects_present=previous_trees is not None and unstored == 0,
        lockfiles=lockfiles,
        sealed=(*sealed, *worktree_sealed),
        allowed=(*allowed, *chosen.allowed),
        worktree_changes=(
            tuple(worktree_changes) if previous_trees and worktree_changes is not None else None
        ),
    )


def _plain(located: Located | None, source: SourceRepo, scan: StatusScan, index: Path) -> bool:
    """Whether git would store the work tree's files as they are (`plain_tree`): its config,
    read by `locate`, and its attributes files."""
    return bool(located and located.plain_config) and plain_repository(source, True, scan, index)


def _seal_staged(
    source: SourceRepo,
    store_repo: Path,
    env: Mapping[str, str],
    staged: _Staged,
    sealing: Sealing,
    scanner: Scanner,
) -> tuple[str, list[SealedFile], list[AllowedSecret]]:
    """The index tree with each staged file that holds a secret replaced by its stand-in, the
    files sealed so, and the staged ones kept because allowed."""
    if not staged.scan.staged_blobs:
        return staged.index_tree, [], []
    to_seal, allowed = staged_to_seal(source, staged.scan.staged_blobs, sealing.allowed, scanner)
    if not to_seal:
        return staged.index_tree, [], allowed
    sealed = seal_candidates(store_repo, to_seal, sealing)
    put_stand_ins(source.toplevel, env, sealed)
    tree = run_git(["write-tree"], cwd=source.toplevel, env=env).decode().strip()
    return tree, sealed, allowed


@contextmanager
def _scratch(parent: Path, early: early_scan.EarlyScan | None) -> Iterator[Path]:
    """The snapshot's scratch directory: the early scan's, when it claimed one, else a new one;
    removed when the block ends either way."""
    if early is None:
        with scratch_directory(parent, early_scan.SCRATCH_PREFIX) as temp:
            yield temp
        return
    try:
        yield early.directory
    finally:
        early.close()


def _temporary_index_env(
    source: SourceRepo, store_repo: Path, index: Path, *, copied: bool = False
) -> dict[str, str]:
    """git's environment for a snapshot: a copy of the user's index (`copied`: the early scan
    made it already), objects written into the store, the user's objects readable as an
    alternate."""
    if not copied and source.index_file.exists():
        early_scan.copy_index(source.index_file, index)
    return {
        "GIT_INDEX_FILE": str(index),
        "GIT_OBJECT_DIRECTORY": str(store_repo / "objects"),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(source.objects_dir),
    }


def _scan_and_stage(
    source: SourceRepo,
    store_repo: Path,
    env: Mapping[str, str],
    located: Located | None,
    early: early_scan.EarlyScan | None = None,
    previous_index: str | None = None,
) -> _Staged:
    """Scan the work tree with `git status` (or take the `early` scan of the same index copy)
    while HEAD is read, the base commit fetched when needed and the staged tree written (or
    taken as `previous_index`, the previous checkpoint's, when the index is the same bytes:
    `staged_tree`); refuse unresolved conflicts and a damaged index."""
    # The directory walk is the slow part: run it while the cheap steps happen beside it.
    # (Writing the staged tree beside it too gained nothing measurable on two cores.)
    status = early.process if early else spawn_git(STATUS_ARGS, cwd=source.toplevel, env=env)
    try:
        head, facts = _head_and_facts(source, located)
        # Whether the store holds the base commit: read through the session when one is
        # open (no process), else asked in one batch with the snapshot's new objects.
        ask_base_later = head.commit is not None and not in_session(store_repo)
        base_bytes = (
            store_repos.ensure_base_commit(store_repo, source, head.commit)
            if head.commit and not ask_base_later
            else 0
        )
        key = index_key(Path(env["GIT_INDEX_FILE"]))
        staged_tree = (remembered_tree(store_repo, key, previous_index) or "").encode()
        if not staged_tree:
            staged_tree = run_git(
                ["write-tree"], cwd=source.toplevel, env=env, ok_codes=(0, 128)
            ).strip()
            if staged_tree:
                remember(store_repo, key, staged_tree.decode())
        _while_status_walks(status, Path(env["GIT_INDEX_FILE"]))
    except BaseException:
        _finish_status(status, source, env, early)
        raise
    raw_status = _finish_status(status, source, env, early)
    scan = parse_status(raw_status)
    if scan.unmerged:
        raise UsageError(
            f"{source.toplevel} has unresolved merge conflicts ({scan.unmerged[0]}"
            f"{' and others' if len(scan.unmerged) > 1 else ''}); resolve them, then checkpoint"
        )
    index_tree = staged_tree.decode().strip()
    if not index_tree:
        raise GitError(f"git write-tree failed in {source.toplevel}; is its index damaged?")
    return _Staged(scan, index_tree, head, facts, base_bytes, ask_base_later)


WARM_UP_ENTRIES = 2000
"""Index entries from which `git status` walks long enough (~10 ms here) to cover loading the
secret scan beside it; on a smaller repository it is done first, and the loading would only
delay a checkpoint that scans nothing."""


def _while_status_walks(status: Spawned, index: Path) -> None:
    """Load what scanning a changed file for secrets needs while `git status` still walks a
    large work tree, instead of after it (issue 22): the rules and their literal gate, ~6 ms
    of a hook on a 5,000-file repository, which would otherwise wait here doing nothing. Only
    when git is still running, and the `index` lists at least :data:`WARM_UP_ENTRIES` files:
    then it costs no time (a checkpoint that scans nothing has loaded them in idle time)."""
    if status.poll() is not None or _index_entries(index) < WARM_UP_ENTRIES:
        return
    import core.redaction.redact  # noqa: F401  (the scan's module, with the rules)
    from core.redaction.literal_gate import automaton

    if status.poll() is None:
        automaton(dfa=False)  # what a changed file's scan builds first (`literal_hits`)


def _index_entries(index: Path) -> int:
    """How many entries the index file says it holds (0 when it cannot be read)."""
    try:
        with open(index, "rb") as handle:
            header = handle.read(12)
    except OSError:
        return 0
    return int.from_bytes(header[8:12], "big") if header[:4] == b"DIRC" else 0


def _finish_status(
    status: Spawned,
    source: SourceRepo,
    env: Mapping[str, str],
    early: early_scan.EarlyScan | None,
) -> bytes:
    """What `git status` printed; an early scan that failed is run again as the snapshot runs
    it, so a guess never changes what the snapshot says (its error included)."""
    try:
        return finish_git(status, "status")
    except GitError:
        if early is None:
            raise
    return finish_git(spawn_git(STATUS_ARGS, cwd=source.toplevel, env=env), "status")


def _head_and_facts(
    source: SourceRepo, located: Located | None
) -> tuple[HeadFacts, RepoFacts | None]:
    """HEAD's facts (from `located` when it read them), and the remotes and upstream with it."""
    if located is None:  # the snapshot alone: HEAD, no remotes or upstream
        return head_facts(source), None
    head = located.head or head_facts(source, upstream=located.any_upstream)
    return head, RepoFacts(located.remotes, head.upstream, head.upstream_head)


def _write_worktree_tree(
    source: SourceRepo,
    store_repo: Path,
    env: Mapping[str, str],
    index_tree: str,
    include: list[str],
    sealed: list[SealedFile],
    *,
    plain: bool,
) -> str:
    """The work tree's tree: the staged tree with the `include`d paths updated from disk and
    the `sealed` ones pointing at their stand-ins. Written here when the repository is
    `plain` (git would store the files as they are) and the store's reader is open; else,
    or when `plain_tree` meets what it does not model, by `update-index` and `write-tree`."""
    if not include and not sealed:
        return index_tree
    reader = session_reader(store_repo) if plain else None
    if reader is not None:
        try:
            return plain_worktree_tree(
                store_repo, source.toplevel, index_tree, include, sealed, reader
            )
        except NotPlain:
            pass  # git's own way, below
    # A file whose directory became a symbolic link is gone from the work tree, as `git add
    # -A` sees it; `update-index --remove` refuses a path beyond a link, so it is forced out.
    beyond_links = [path for path in include if beyond_a_link(source.toplevel, path)]
    for args, paths in (  # out first: the link may be added where they were
        (["--force-remove"], beyond_links),
        (["--add", "--remove"], [path for path in include if path not in beyond_links]),
    ):
        if paths:
            run_git(
                ["update-index", *args, "-z", "--stdin"],
                cwd=source.toplevel,
                env=env,
                input=b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths),
            )
    put_stand_ins(source.toplevel, env, sealed)
    return run_git(["write-tree"], cwd=source.toplevel, env=env).decode().strip()


def _submodule_commits(
    source: SourceRepo, env: Mapping[str, str], tree: str
) -> list[tuple[str, str]]:
    """The submodules in `tree` and the commits it records for them: (path, commit)."""
    raw = run_git(["ls-tree", "-r", "-z", tree], cwd=source.toplevel, env=env)
    result = []
    for entry in raw.split(b"\0"):
        if entry.startswith(GITLINK_MODE.encode()):
            meta, _, path = entry.decode("utf-8", errors="surrogateescape").partition("\t")
            result.append((path, meta.split()[2]))
    return result
