"""Coming back to a checkpoint: restore validation, the user's worktree, the resume brief."""
