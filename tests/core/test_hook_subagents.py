"""A subagent's tool events are attributed in evidence and side effects (issue #15, subagents).

Claude Code's events from a subagent (the Task tool) carry `agent_id` and `agent_type`; the main
agent's carry neither. The operator reading evidence or an effect's history must see which
agent acted. The payloads are the real client's (tests/fixtures/claude_code/real/).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.engine import Engine
from core.harness.claude_code import claude_code
from core.harness.context import HookContext, HookReply
from core.harness.rules import DEFAULT_RULES, Rule
from tui.render import evidence_text

REAL = Path(__file__).parents[1] / "fixtures/claude_code/real"
RULES = (
    *(r for r in DEFAULT_RULES if r.name != "git-push"),
    Rule("git-push", (("git", "push"),), approval=False),
)


def real(name: str, cwd: Path, **changes: Any) -> bytes:
    event = json.loads((REAL / f"{name}.json").read_text().replace("$CWD", str(cwd)))
    event.update(changes)
    return json.dumps(event).encode()


def run(raw: bytes) -> HookReply:
    reply = claude_code(raw, HookContext(rules=RULES))
    assert reply.exit_code == 0, reply
    return reply


def only_task(engine: Engine) -> str:
    [task] = engine.list_tasks()
    return task.id


def test_a_subagents_evidence_names_it(repo: Path) -> None:
    run(real("session_start", repo))
    run(real("post_tool_use_subagent_bash", repo))
    run(real("post_tool_use_bash", repo))  # the main agent's: no agent fields
    with Engine() as engine:
        by_subagent, by_main = (
            engine.get_evidence(i.id) for i in engine.list_evidence(only_task(engine))
        )
    assert by_subagent.command is not None and by_main.command is not None
    assert by_subagent.command["agent"] == {"id": "a0000000000000001", "type": "general-purpose"}
    assert "agent" not in by_main.command
    assert "agent       subagent general-purpose (a0000000000000001)" in evidence_text(by_subagent)
    assert "agent " not in evidence_text(by_main)


def test_a_subagents_guarded_command_is_attributed_in_the_effects_history(repo: Path) -> None:
    run(real("session_start", repo))
    agent = {"agent_id": "a0000000000000002", "agent_type": "deployer"}
    started = run(real("pre_tool_use_git_push", repo, **agent))
    assert started.stdout == "", started
    with Engine() as engine:
        task_id = only_task(engine)
        [effect] = engine.list_effects(task_id)
        history = [e for e in engine.events(task_id) if e.entity_id == effect.key]
    reasons = " | ".join(e.reason or "" for e in history)
    assert "by subagent deployer (a0000000000000002)" in reasons, reasons


def test_agent_fields_are_bounded_and_one_line(repo: Path) -> None:
    run(real("session_start", repo))
    hostile = {"agent_id": "a1\n\x1b[31mforged line", "agent_type": "x" * 5000}
    run(real("post_tool_use_subagent_bash", repo, **hostile))
    with Engine() as engine:
        [item] = engine.list_evidence(only_task(engine))
        agent = engine.get_evidence(item.id).command["agent"]  # type: ignore[index]
    assert agent["id"] == "a1 [31mforged line"
    assert len(agent["type"]) == 120


def test_a_secret_in_an_agent_field_is_redacted(repo: Path) -> None:
    run(real("session_start", repo))
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    run(real("post_tool_use_subagent_bash", repo, agent_type=f"agent-{token}"))
    with Engine() as engine:
        [item] = engine.list_evidence(only_task(engine))
        shown = json.dumps(engine.get_evidence(item.id).command)
    assert token not in shown and "REDACTED" in shown
