"""Agent harnesses (Claude Code, Codex) hooked into the engine.

`claude_code` and `codex` answer each harness's events; `context` holds what both share (the
event, the reply, the store opened on first use); `rules` and `commands` decide whether a shell
command acts outside the sandbox, `guard` what happens to one that does; `tool_results` records
a finished command; `sessions` finds the task a session feeds; `install` edits the harnesses'
settings. Everything a hook loads on every tool call is standard library only at import time.
"""
