"""Checkpoints and ledgers through a git remote: push, fetch, list, sync."""
