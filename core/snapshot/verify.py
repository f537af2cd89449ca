"""Verifying a checkpoint: re-reading it from the store, as a restore would need it.

Every checkpoint is verified before it counts as complete (a checkpoint that cannot be
restored is marked incomplete, never trusted). The cheap reads go through the operation's
`cat-file` session; the walk of every object of both trees, the costly part, runs in the
background while the checkpoint goes on, and is waited for only when its answer is asked.
The walk finds every missing object, and every loose object whose content no longer hashes to
its id (git itself never rehashes what it reads); a packed object is left to the pack's own
checks. Once a checkpoint is found complete, `core.snapshot.verified` remembers it with a
fingerprint of the store's object files, so it is walked again only after one of them changed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from core.digests import sha256
from core.errors import DamagedObjectError
from core.git.objects import parse_tree
from core.git.reader import ObjectReader, held_objects, read_objects
from core.git.run import finish_git, spawn_git
from core.snapshot.checkpoint import MANIFEST_FILE
from core.snapshot.verified import still_verified
from core.snapshot.verified_reads import rehash

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from core.git.spawn import Spawned

TREE_MODE, GITLINK_MODE = "40000", "160000"


class TreeWalk:
    """A `git rev-list --objects --missing=print` over some trees, running until asked."""

    def __init__(
        self,
        missing: int,
        process: Spawned | None,
        store_repo: Path | None = None,
        seen: Iterable[str] = (),
    ) -> None:
        self._missing = missing
        self._process = process
        self._store_repo = store_repo
        self._seen = list(seen)
        self.damaged: list[str] = []
        self.walked: list[str] = []  # every object the walk reached (once it ended)
        self.loose: dict[str, str] = {}  # the sound loose ones' file states
        self.unreadable = False
        self.known_loose: set[str] | None = None  # the store's loose ids, when listed already

    @classmethod
    def start(
        cls,
        store_repo: Path,
        trees: list[str],
        exclude: Sequence[str] = (),
        presence: Mapping[str, bool] | None = None,
    ) -> TreeWalk:
        """Start walking what `trees` (and not `exclude`) reach; `presence` (tree → held),
        when the caller already read the trees, spares asking again."""
        if presence is None or any(tree not in presence for tree in trees):
            presence = held_objects(store_repo, trees)
        missing = sum(1 for tree in dict.fromkeys(trees) if not presence[tree])
        present_trees = [tree for tree in dict.fromkeys(trees) if presence[tree]]
        if not present_trees:
            return cls(missing, None)
        if not exclude:
            seen = _held_here(store_repo, present_trees)
            if seen is not None:
                return cls(missing, None, store_repo, [*present_trees, *seen])
        args = [
            "rev-list",
            "--objects",
            "--no-object-names",
            "--missing=print",
            *present_trees,
            *[f"^{tree}" for tree in exclude],
        ]
        process = spawn_git(args, cwd=store_repo, env={"GIT_DIR": str(store_repo)})
        # a whole walk rehashes the loose objects it reached; a partial one (beside a restore,
        # which reads every blob itself) only counts what is missing
        return cls(missing, process, None if exclude else store_repo, present_trees)

    def missing(self) -> int:
        """How many objects the store cannot produce (waits for the walk to end); the walked
        objects whose loose file is damaged are then in `damaged`."""
        if self._process is not None:
            process, self._process = self._process, None
            out = finish_git(process, "rev-list", ok_codes=(0, 128))
            listed = out.decode().split()
            found = sum(1 for line in listed if line.startswith("?"))
            self._missing += found
            self.unreadable = process.returncode != 0 and not found  # a tree git cannot parse
            self._seen += [line for line in listed if not line.startswith("?")]
        if self._store_repo is not None:
            self.walked, self._seen = self._seen, []
            self.damaged, self.loose = damaged_loose(
                self._store_repo, self.walked, self.known_loose
            )
        return self._missing


_HERE_LIMIT = 256
"""Objects a walk reads from the repository's files before leaving the rest to `rev-list`."""


def _held_here(store_repo: Path, trees: list[str]) -> set[str] | None:
    """Every object `trees` reach, when each is seen in the repository's files (loose, or whole
    in a pack): a small checkpoint is verified with no git process. None is not "missing",
    only "not sure here" (a delta, an alternate, a big tree): `rev-list` then decides."""
    reader = ObjectReader(store_repo)
    try:
        seen: set[str] = set()
        queue = list(trees)
        while queue:
            found = reader.read_here(queue.pop())
            if found is None or found[0] != "tree":
                return None
            try:
                entries = parse_tree(found[1])
            except ValueError:  # not a tree's bytes (damaged): `rev-list` and the rehash say so
                return None
            for mode, _name, oid in entries:
                if oid in seen or mode == GITLINK_MODE:  # rev-list skips submodule commits
                    continue
                seen.add(oid)
                if len(seen) > _HERE_LIMIT:
                    return None
                if mode == TREE_MODE:
                    queue.append(oid)
                elif not reader.held_here(oid):
                    return None
        return seen
    finally:
        reader.close()


def damaged_loose(
    store_repo: Path, oids: Iterable[str], known_loose: set[str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """Those of `oids` stored as a loose object file whose content does not inflate, or does
    not hash to its id (a file edited in place), and the state of each loose file that was
    sound (`verified_reads.file_state`, taken as it was opened). Only the loose files are
    read: those of `known_loose` (the store's loose ids, listed before the walk), or else
    those one listing of each fan-out directory a walked object lives in shows."""
    objects = store_repo / "objects"
    wanted: dict[str, set[str]] = {}
    for oid in oids:
        wanted.setdefault(oid[:2], set()).add(oid[2:])
    damaged = []
    states: dict[str, str] = {}
    for fan_out, rests in sorted(wanted.items()):
        if known_loose is not None:
            present = {rest for rest in rests if fan_out + rest in known_loose}
        else:
            try:
                present = rests.intersection(os.listdir(objects / fan_out))
            except (FileNotFoundError, NotADirectoryError):
                continue
        for rest in sorted(present):
            try:
                state = rehash(f"{objects}/{fan_out}/{rest}", fan_out + rest)
            except FileNotFoundError:
                continue  # gone meanwhile (packed by a gc): rev-list saw it held
            except OSError:
                state = None
            if state is None:
                damaged.append(fan_out + rest)
            else:
                states[fan_out + rest] = state
    return damaged, states


class Verification:
    """What `verify_checkpoint` found, its walk of the trees' objects maybe still running."""

    def __init__(self, problems: list[str], missing: int = 0, walk: TreeWalk | None = None) -> None:
        self._problems = problems
        self._missing = missing
        self._walk = walk
        self.walk: TreeWalk | None = None  # the walk, once ended (None: nothing was walked)
        if walk is None:
            self._state_missing()

    def problems(self) -> list[str]:
        """Every problem found (waits for the walk): empty when the checkpoint is sound."""
        if self._walk is not None:
            walk, self._walk = self._walk, None
            self.walk = walk
            self._missing += walk.missing()
            self._state_missing()
            if walk.damaged:
                self._problems.append(
                    f"{len(walk.damaged)} snapshot object(s) are damaged in the store "
                    f"repository (e.g. {walk.damaged[0][:12]}: its content does not match its id)"
                )
            if walk.unreadable:
                self._problems.append("git cannot read the snapshot's trees in the store")
        return self._problems

    def _state_missing(self) -> None:
        if self._missing:
            self._problems.append(
                f"{self._missing} snapshot object(s) are missing from the store repository"
            )


def verify_checkpoint(
    store_repo: Path,
    *,
    commit: str,
    worktree_tree: str,
    index_tree: str,
    manifest_sha256: str | None,
    deep: bool = True,
    objects_present: bool = False,
    known_loose: set[str] | None = None,
) -> Verification:
    """Re-read a checkpoint from the store; `.problems()` lists every problem found (empty
    when sound).

    The commit, its root entries, the manifest (by sha256) and both snapshot root trees are
    read back at once (through the operation's object reader when one is open). `deep` then
    walks every object of both snapshot trees; without it only what the index tree holds
    beyond the worktree tree is walked (a restore reads every blob anyway and reports any
    missing one itself). `objects_present` (the writer checked every object of both trees as
    it stored them, see `Snapshot.objects_present`) skips the walk; `known_loose` (the store's
    loose ids, listed by the caller before) spares the walk listing them again. The walk runs in the
    background until `.problems()` is asked: a checkpoint takes its snapshot meanwhile.
    """
    if not (store_repo / "objects").is_dir():
        return Verification([f"the store repository {store_repo} is missing"])
    manifest_spec = f"{commit}:{MANIFEST_FILE}"
    specs = [commit, f"{commit}^{{tree}}", worktree_tree, index_tree]
    if manifest_sha256 is not None:
        specs.append(manifest_spec)
    try:
        found = read_objects(store_repo, list(dict.fromkeys(specs)))
    except DamagedObjectError as exc:  # an object git cannot inflate: damage, said as such
        return Verification([exc.message])
    if found[commit] is None:
        return Verification(
            [f"checkpoint commit {commit[:12]} is missing from the store repository"]
        )
    problems = _root_problems(found[f"{commit}^{{tree}}"] or b"", worktree_tree, index_tree)
    if manifest_sha256 is not None:
        problems += _manifest_problems(found[manifest_spec], manifest_sha256)
    presence = {tree: found[tree] is not None for tree in (worktree_tree, index_tree)}
    if objects_present:
        return Verification(problems, sum(1 for present in presence.values() if not present))
    if deep:
        walk = TreeWalk.start(store_repo, [worktree_tree, index_tree], presence=presence)
        walk.known_loose = known_loose
    else:  # the restore walks the worktree tree itself; check what only the index holds
        walk = TreeWalk.start(store_repo, [index_tree], exclude=[worktree_tree], presence=presence)
    return Verification(problems, walk=walk)


def verify_previous(store_repo: Path, commit: str, trees: tuple[str, str]) -> Verification:
    """The previous checkpoint's trees, checked before a new snapshot builds on them: walked
    in the background, unless it was the last verified and no object has gone since."""
    if still_verified(store_repo, commit):
        return Verification([])
    return verify_checkpoint(
        store_repo,
        commit=commit,
        worktree_tree=trees[0],
        index_tree=trees[1],
        manifest_sha256=None,
    )


def _root_problems(root_tree: bytes, worktree_tree: str, index_tree: str) -> list[str]:
    """What is wrong with the commit's `worktree/` and `index/` entries."""
    try:
        entries = {name: oid for _mode, name, oid in parse_tree(root_tree)}
    except ValueError:
        return ["the checkpoint commit's tree cannot be read (damaged)"]
    problems = []
    if entries.get("worktree") != worktree_tree:
        problems.append("the commit's worktree/ tree differs from the recorded snapshot tree")
    if entries.get("index") != index_tree:
        problems.append("the commit's index/ tree differs from the recorded staged tree")
    return problems


def _manifest_problems(manifest: bytes | None, manifest_sha256: str) -> list[str]:
    """What is wrong with the stored manifest, against its recorded sha256."""
    if manifest is None:
        return [f"{MANIFEST_FILE} cannot be read from the checkpoint commit"]
    if sha256(manifest).hexdigest() != manifest_sha256:
        return [f"{MANIFEST_FILE} does not match its recorded sha256"]
    return []
