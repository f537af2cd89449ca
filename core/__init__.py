"""Pitstop's engine: checkpoints, store and snapshots, free of any terminal UI.

Everything a harness, the CLI or the dashboard does goes through `core.engine`.
"""

__version__ = "0.1.0"
