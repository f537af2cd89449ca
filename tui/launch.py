"""The `pitstop` entry point: a harness hook takes a fast path, everything else the full CLI.

`pitstop hook claude-code` runs on every tool call an agent makes, so it must start almost as
fast as Python itself: it loads neither click nor the command modules, only the harness's own
module (`core.harness.claude_code` or `core.harness.codex`), which opens the store only when
there is something to record. Once the
answer is written (every write already committed), the process ends with `os._exit`: the store's
connection is not closed, so SQLite does not checkpoint its WAL on every tool call, and the
interpreter does not tear down the modules it loaded. The commands people type to look around
(`--help`, `locate`, `task list`, `checkpoints`, `show`) take `tui.quick`, and `checkpoint TASK`
(what agents and scripts run again and again) `tui.quick_checkpoint`, and `diff TASK@SEQ` and
`validate TASK@SEQ --offline` `tui.quick_diffval`, click-free, ended the same way. Any other
command line (and one of those with options the fast paths do not know) goes to `tui.cli`.
"""

from __future__ import annotations

import contextlib
import os
import sys

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from core.harness.context import HookReply

_HARNESSES = ("claude-code", "codex")


def _fast_hook(args: list[str]) -> int | None:
    """Run `hook claude-code|codex [--event NAME]` or `hook codex JSON`; None: not for this path."""
    harness, rest = args[0], args[1:]
    event_hint: str | None = None
    if rest[:1] == ["--event"] and len(rest) == 2:
        event_hint, rest = rest[1], []
    elif len(rest) == 1 and rest[0].startswith("--event="):
        event_hint, rest = rest[0].split("=", 1)[1], []
    elif rest and (harness == "claude-code" or len(rest) > 1 or rest[0].startswith("-")):
        return None
    from core.harness.context import HookContext

    context = HookContext(keep_store_open=True)  # closed by the process exit (see main)
    if harness == "claude-code":
        from core.harness.claude_code import claude_code

        reply = claude_code(sys.stdin.buffer.read(), context, event_hint)
    else:
        from core.harness.codex import codex_notify

        payload = rest[0] if rest else sys.stdin.read()
        reply = codex_notify(payload, context, event_hint)
    return emit_reply(reply)


def emit_reply(reply: HookReply) -> int:
    """Print a hook's answer (stdout for the harness, stderr for people) and return its code."""
    if reply.stdout:
        sys.stdout.write(reply.stdout)
        sys.stdout.flush()
    if reply.stderr:
        sys.stderr.write(reply.stderr)
        sys.stderr.flush()
    return reply.exit_code


def _exit_now(code: int) -> None:
    """End the hook process at once: output flushed, no interpreter teardown (see above)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # the harness closed the pipe
            stream.flush()
    os._exit(code)


def main() -> None:
    """Dispatch to the hook fast path, the looking-around fast path or the full command line."""
    args = sys.argv[1:]
    wants_help = any(word in ("-h", "--help") for word in args)
    if len(args) >= 2 and args[0] == "hook" and args[1] in _HARNESSES and not wants_help:
        code = _fast_hook(args[1:])
        if code is not None:
            _exit_now(code)
    if args[:1] == ["checkpoint"] and not wants_help:
        from tui.quick_checkpoint import run as checkpoint

        code = checkpoint(args)
        if code is not None:
            _exit_now(code)
    if args[:1] in (["diff"], ["validate"]) and not wants_help:
        from tui.quick_diffval import run as diff_or_validate

        code = diff_or_validate(args)
        if code is not None:
            _exit_now(code)
    from tui.quick import run

    code = run(args)
    if code is not None:
        _exit_now(code)
    from tui.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
