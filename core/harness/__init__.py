"""Agent harnesses (Claude Code, Codex) hooked into the engine."""
