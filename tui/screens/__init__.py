"""The dashboard's screens: the task list and one task's checkpoints."""
