"""Checks on the user's repository: the base commit, branch drift, the target, lockfiles, upstream.

These say whether the world the checkpoint was taken in has moved on: a branch that touched the
same files or was rewritten, a changed lockfile, an upstream that moved (asked over the network,
`unknown` offline). They only read the repository, never write to it.
"""

from __future__ import annotations

from core.git.run import run_git
from core.restore import worktree
from core.restore.findings import Finding, Status, ValidationInputs, Verdict, manifest_of
from core.snapshot import SealedFile, sealed_files_of


def check_base_commit(inputs: ValidationInputs) -> list[Finding]:
    """The repository is there, and still has the commit the checkpoint was based on."""
    base = manifest_of(inputs).get("repository", {}).get("base_commit")
    if inputs.source is None:
        return [
            Finding(
                "repository",
                Status.FAIL,
                inputs.source_error or "repository missing",
                "restore the repository at its old path, or resume with --into a new "
                "directory from a clone",
                Verdict.BLOCKED,
            )
        ]
    if not base:
        return [Finding("base-commit", Status.PASS, "the repository had no commit yet")]
    if worktree.has_commit(inputs.source, base):
        return [
            Finding("base-commit", Status.PASS, f"base commit {base[:12]} is in the repository")
        ]
    return [
        Finding(
            "base-commit",
            Status.WARN,
            f"base commit {base[:12]} is gone from the repository (kept in the store)",
            "resume brings it back from the Pitstop store; nothing to do",
            Verdict.STALE,
        )
    ]


def check_branch(inputs: ValidationInputs) -> list[Finding]:
    """The checkpoint's branch still exists and has not moved onto the files it changed."""
    repo = manifest_of(inputs).get("repository", {})
    branch, base = repo.get("branch"), repo.get("base_commit")
    if inputs.source is None or not base:
        return []
    if not branch:
        return [Finding("branch", Status.PASS, "checkpoint was taken on a detached HEAD")]
    changed = {c["path"] for c in manifest_of(inputs).get("snapshot", {}).get("changed_files", [])}
    drift = worktree.branch_drift(inputs.source, branch, base, changed)
    # The tip seen now, kept with the finding: once the branch moves, this verdict is out of date.
    seen = (("branch", branch), ("branch_head", drift.head or ""))
    if not drift.exists:
        return [
            Finding(
                "branch",
                Status.WARN,
                f"branch {branch} no longer exists",
                f"resume creates pitstop/{inputs.task.id} from the base commit",
                observed=seen,
            )
        ]
    if drift.rewritten:
        return [
            Finding(
                "branch",
                Status.FAIL,
                f"branch {branch} was rewritten: the base commit {base[:12]} is no longer "
                "in its history",
                f"rebase the resumed work onto {branch} after resuming, or start fresh",
                Verdict.STALE,
                observed=seen,
            )
        ]
    if not drift.commits:
        return [Finding("branch", Status.PASS, f"branch {branch} has not moved", observed=seen)]
    listed = "; ".join(drift.commits[:3]) + (" …" if len(drift.commits) > 3 else "")
    if drift.touched:
        return [
            Finding(
                "branch",
                Status.FAIL,
                f"branch {branch} moved {len(drift.commits)} commit(s) ({listed}) touching "
                f"files this checkpoint changed: {', '.join(drift.touched[:5])}",
                f"resume, then merge or rebase onto {branch} and resolve those files; or "
                "start fresh if cheaper (`pitstop cost`)",
                Verdict.STALE,
                observed=seen,
            )
        ]
    return [
        Finding(
            "branch",
            Status.WARN,
            f"branch {branch} moved {len(drift.commits)} commit(s) ({listed}), none "
            "touching this checkpoint's files",
            f"after resuming, rebase onto {branch} (no conflicts expected)",
            observed=seen,
        )
    ]


def check_target(inputs: ValidationInputs) -> list[Finding]:
    """The `--into` directory is new, empty, or already equal to the snapshot."""
    into = inputs.into
    if into is None:
        return [Finding("target", Status.PASS, "no target directory given")]
    if not into.exists():
        return [Finding("target", Status.PASS, f"{into} does not exist yet")]
    if into.is_dir() and not any(into.iterdir()):
        return [Finding("target", Status.PASS, f"{into} is empty")]
    cp = inputs.checkpoint
    if (
        into.is_dir()
        and cp
        and cp.worktree_tree
        and worktree.tree_equals_directory(
            inputs.store_repo, cp.worktree_tree, into, inputs.scratch, _sealed_worktree(inputs)
        )
    ):
        return [Finding("target", Status.PASS, f"{into} already equals the snapshot")]
    return [
        Finding(
            "target",
            Status.FAIL,
            f"{into} exists and differs from the snapshot",
            "choose a new --into directory, or move that one aside",
        )
    ]


def _sealed_worktree(inputs: ValidationInputs) -> list[SealedFile]:
    """The snapshot's files stored sealed in its work tree (compared by their real bytes)."""
    return sealed_files_of(manifest_of(inputs), "worktree")


def check_lockfiles(inputs: ValidationInputs) -> list[Finding]:
    """The repository's lockfiles are the ones the snapshot recorded."""
    recorded: dict[str, str] = manifest_of(inputs).get("lockfiles", {})
    if inputs.source is None:
        return []
    if not recorded:
        return [Finding("lockfiles", Status.PASS, "no lockfiles in the snapshot")]
    now = worktree.worktree_blob_ids(inputs.source, sorted(recorded))
    drifted = [path for path, blob in recorded.items() if now.get(path) != blob]
    if drifted:
        return [
            Finding(
                "lockfiles",
                Status.FAIL,
                f"lockfile changed since the checkpoint: {', '.join(drifted)}",
                "reinstall dependencies from the snapshot's lockfile after resuming, "
                "or start fresh",
                Verdict.STALE,
            )
        ]
    return [Finding("lockfiles", Status.PASS, f"{len(recorded)} lockfile(s) unchanged")]


def check_upstream(inputs: ValidationInputs) -> list[Finding]:
    """The upstream branch on the remote is where it was (unknown offline)."""
    upstream = manifest_of(inputs).get("repository", {}).get("upstream", {}) or {}
    name, head = upstream.get("name"), upstream.get("head")
    if not name or not head or inputs.source is None:
        return [Finding("upstream", Status.PASS, "no upstream branch recorded")]
    if inputs.offline:
        return [
            Finding(
                "upstream",
                Status.UNKNOWN,
                f"{name} not checked (offline)",
                "run without --offline to compare with the remote",
                Verdict.STALE,
            )
        ]
    remote, _, branch = name.partition("/")
    try:
        wanted = f"refs/heads/{branch}"
        out = run_git(["ls-remote", remote, wanted], cwd=inputs.source.toplevel)
    except Exception as exc:
        return [
            Finding(
                "upstream",
                Status.UNKNOWN,
                f"{name} could not be reached ({exc})",
                "check the network or run with --offline",
            )
        ]
    now = next(
        (line.split()[0] for line in out.decode().splitlines() if line.split()[1:] == [wanted]),
        None,
    )
    if now is None:
        return [
            Finding(
                "upstream",
                Status.WARN,
                f"{name} no longer exists on the remote",
                "push the branch again after resuming",
            )
        ]
    if now != head:
        return [
            Finding(
                "upstream",
                Status.WARN,
                f"{name} moved from {head[:12]} to {now[:12]} on the remote",
                f"fetch and rebase onto {name} after resuming",
            )
        ]
    return [Finding("upstream", Status.PASS, f"{name} unchanged on the remote")]
