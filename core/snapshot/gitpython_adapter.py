"""The one module that uses GitPython: explaining a refused path, and creating store repos.

GitPython is imported only inside these functions: it costs a hook process as much as ~7 bare
git starts, and both are rare (a path git would not locate; a store repository made once).
No GitPython object leaves this module.
"""

from __future__ import annotations

from pathlib import Path

from core.errors import GitError, NotAGitRepoError


def work_tree_of(candidate: Path) -> Path:
    """The work tree containing `candidate`, when `git rev-parse` refused it: explain why (no
    repository, a bare one) as a NotAGitRepoError."""
    import git as gitpython  # only when the quick look failed

    try:
        repo = gitpython.Repo(candidate, search_parent_directories=True)
    except (gitpython.InvalidGitRepositoryError, gitpython.NoSuchPathError) as exc:
        raise NotAGitRepoError(
            f"{candidate.absolute()} is not inside a git work tree; run `git init` there or pass "
            "--repo the path of your repository"
        ) from exc
    try:
        if repo.bare or repo.working_tree_dir is None:
            raise NotAGitRepoError(
                f"{candidate.absolute()} is a bare git repository; a task needs a work tree"
            )
        return Path(repo.working_tree_dir)
    finally:
        repo.close()


def init_private_bare_repo(path: Path) -> None:
    """Create (or complete) a bare repository readable by its owner only, whose objects only
    Pitstop's own gc may prune."""
    import git as gitpython

    try:
        repo = gitpython.Repo.init(path, bare=True, shared="0600")
        try:
            with repo.config_writer() as config:
                config.set_value("core", "logAllRefUpdates", "false")
                # Files readable by their owner only (invariant 9).
                config.set_value("core", "sharedRepository", "0600")
                # Only Pitstop's own gc may prune; checkpoints must not vanish behind its back.
                config.set_value("gc", "auto", "0")
                config.set_value("gc", "pruneExpire", "never")
        finally:
            repo.close()
    except (gitpython.GitError, OSError) as exc:
        raise GitError(f"cannot create the store repository {path}: {exc}") from exc
