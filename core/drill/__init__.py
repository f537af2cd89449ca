"""Restore drills' pure parts: the failing tests a test run names, and how a replay compares.

The use-case that restores, replays and records is `core.engine.drill`; what lives here reads
only text and numbers, so it is tested (with Hypothesis) without a store or a repository.
"""
