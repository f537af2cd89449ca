"""Harness hooks: Claude Code's hook events and Codex's notify program, turned into Pitstop records.

Nobody types `pitstop checkpoint` in the middle of an agent run, so the harness tells Pitstop
what happens: a session starts (the task and the session are linked), a shell command ran
(evidence), a turn ended or the context is about to be compacted (a checkpoint), the agent waits
for its user (the task shows in the inbox). Before a shell command that acts outside the sandbox
(`git push`, `npm publish`, a deploy…), the hook is a **guard**: the command becomes a side
effect keyed by the task and the normalised command, so it runs once, after an approval when its
rule asks for one, and never again after a resume.

Two failure policies: an observation that cannot be recorded is reported on stderr and never
breaks the agent (exit 0); a guard that cannot decide blocks the command with its reason.

This module is on every tool call's path: it imports only the standard library at load time.
A `PreToolUse` for a command no rule matches is decided without opening the store; the engine
(SQLite, git, crypto) is loaded only when something must be recorded.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from core.errors import NotAGitRepoError, PitstopError, UsageError

if TYPE_CHECKING:
    from core.engine import Engine
    from core.models import Task

CLAUDE_CODE = "claude-code"
CODEX = "codex"

# Events whose answer decides whether a tool call runs: they fail closed.
GUARD_EVENTS = frozenset({"PreToolUse"})
# Every Claude Code event `hook install` subscribes to, with its matcher (None: all).
CLAUDE_CODE_EVENTS: tuple[tuple[str, str | None], ...] = (
    ("SessionStart", None),
    ("UserPromptSubmit", None),
    ("PreToolUse", "Bash"),
    ("PostToolUse", "Bash"),
    ("PostToolUseFailure", "Bash"),
    ("Notification", None),
    ("Stop", None),
    ("PreCompact", None),
    ("SessionEnd", None),
)
HOOK_TIMEOUT_S = 60
MAX_INPUT_BYTES = 64 * 1024 * 1024

# Notification types (and, for older versions, message texts) that mean "the agent waits for you".
_WAITING_TYPES = frozenset({"idle_prompt", "permission_prompt", "elicitation_dialog"})
_WAITING_TEXT = re.compile(
    r"waiting for your input|needs your permission|needs your attention", re.I
)


# --- rules ------------------------------------------------------------------------------------


class Rule(NamedTuple):
    """A kind of shell command that acts outside the sandbox, and whether it needs an approval."""

    name: str
    match: tuple[tuple[str, ...], ...]
    approval: bool = True
    http_write: bool = False  # count a match only when it sends data to a non-loopback host


def _rule(name: str, *patterns: str, approval: bool = True, http_write: bool = False) -> Rule:
    return Rule(name, tuple(tuple(p.split()) for p in patterns), approval, http_write)


DEFAULT_RULES: tuple[Rule, ...] = (
    _rule("git-push", "git push"),
    _rule("gh-pr-create", "gh pr create", approval=False),
    _rule("gh-pr-merge", "gh pr merge"),
    _rule("gh-pr-comment", "gh pr comment", "gh issue comment", approval=False),
    _rule("gh-release", "gh release create", "gh release upload", "gh release delete"),
    _rule("npm-publish", "npm publish", "pnpm publish", "yarn publish"),
    _rule("twine-upload", "twine upload", "uv publish", "poetry publish"),
    _rule("docker-push", "docker push", "podman push"),
    _rule("kubectl-apply", "kubectl apply", "kubectl delete", "kubectl create", "kubectl patch"),
    _rule("helm-upgrade", "helm upgrade", "helm install", "helm uninstall"),
    _rule("terraform-apply", "terraform apply", "terraform destroy", "tofu apply"),
    _rule("http-write", "curl", "wget", http_write=True),
)

_RULE_KEYS = frozenset({"match", "approval", "http_write", "enabled"})


def load_rules(path: Path | None = None) -> tuple[Rule, ...]:
    """The rule list: the defaults, changed by `[hooks.rules.NAME]` tables in `config.toml`.

    A table may replace a default's `match` or `approval`, disable it (`enabled = false`) or add
    a new rule. A malformed table is a clear error (the guard then blocks, naming the file).
    """
    if path is None:
        from core.paths import config_dir

        path = config_dir() / "config.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return DEFAULT_RULES
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"cannot read {path}: {exc}; fix or remove that file") from exc
    tables = data.get("hooks", {}).get("rules", {})
    if not isinstance(tables, dict):
        raise UsageError(f"{path}: [hooks.rules] must hold tables, e.g. [hooks.rules.git-push]")
    rules = {rule.name: rule for rule in DEFAULT_RULES}
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise UsageError(f"{path}: hooks.rules.{name} must be a table")
        unknown = set(table) - _RULE_KEYS
        if unknown:
            raise UsageError(
                f"{path}: unknown key hooks.rules.{name}.{sorted(unknown)[0]}; "
                f"known: {', '.join(sorted(_RULE_KEYS))}"
            )
        for flag in ("approval", "http_write", "enabled"):
            if flag in table and not isinstance(table[flag], bool):
                raise UsageError(f"{path}: hooks.rules.{name}.{flag} must be true or false")
        if table.get("enabled", True) is False:
            rules.pop(name, None)
            continue
        base = rules.get(name)
        patterns = table.get("match")
        if patterns is None and base is None:
            raise UsageError(f'{path}: hooks.rules.{name} needs match = "COMMAND WORDS"')
        if isinstance(patterns, str):
            patterns = [patterns]
        if patterns is not None and (
            not isinstance(patterns, list)
            or not patterns
            or not all(isinstance(p, str) and p.split() for p in patterns)
        ):
            raise UsageError(
                f"{path}: hooks.rules.{name}.match must be command words or a list of them"
            )
        rules[name] = Rule(
            name=name,
            match=tuple(tuple(p.split()) for p in patterns) if patterns else base.match,  # type: ignore[union-attr]
            approval=table.get("approval", base.approval if base else True),
            http_write=table.get("http_write", base.http_write if base else False),
        )
    return tuple(rules.values())


class RuleMatch(NamedTuple):
    """A command a rule caught: the rule, the normalised command and its idempotency key."""

    rule: Rule
    command: str
    key: str


# Wrappers that run the next words as the command.
_WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "command", "exec", "nice", "doas"})
# Options whose value is the next word, so that value is not taken for a subcommand.
_OPTIONS_WITH_VALUE = frozenset(
    {"-C", "-c", "-R", "--repo", "-n", "--namespace", "--context", "--kubeconfig", "-chdir"}
)
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "|&", ";;", "(", ")"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def normalise_command(command: str) -> str:
    """One spelling per command: shell words joined by single spaces (quotes resolved)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return " ".join(words)


def effect_key(rule_name: str, normalised: str) -> str:
    """The side effect's idempotency key: the rule's name and a hash of the normalised command."""
    import hashlib  # OpenSSL loads only when a rule matched

    digest = hashlib.sha256(normalised.encode("utf-8", "surrogateescape")).hexdigest()
    return f"{rule_name}:{digest[:16]}"


def _segments(command: str) -> list[list[str]]:
    """The simple commands in a command line (split at `&&`, `;`, `|`, newlines…)."""
    segments: list[list[str]] = []
    for line in re.split(r"\n", command):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        current: list[str] = []
        try:
            words = list(lexer)
        except ValueError:
            words = line.split()
        for word in words:
            if word in _SEPARATORS:
                if current:
                    segments.append(current)
                current = []
            else:
                current.append(word)
        if current:
            segments.append(current)
    return segments


def _command_words(segment: list[str]) -> list[str]:
    """A simple command without leading assignments and wrappers (`FOO=1 sudo git push`)."""
    index = 0
    while index < len(segment) and (
        _ASSIGNMENT.match(segment[index]) or os.path.basename(segment[index]) in _WRAPPERS
    ):
        index += 1
    words = segment[index:]
    if words:
        words = [os.path.basename(words[0]), *words[1:]]
    return words


def _positional(words: list[str]) -> list[str]:
    """The words that are not options (and not the values of options that take one)."""
    found: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word.startswith("-"):
            skip = word in _OPTIONS_WITH_VALUE
            continue
        found.append(word)
    return found


def match_command(command: str, rules: Sequence[Rule]) -> RuleMatch | None:
    """The first rule that catches any simple command in `command`, or None."""
    if not command.strip():
        return None
    for segment in _segments(command):
        words = _command_words(segment)
        if not words:
            continue
        positional = _positional(words)
        for rule in rules:
            for pattern in rule.match:
                if tuple(positional[: len(pattern)]) != pattern:
                    continue
                if rule.http_write and not _writes_to_remote(words):
                    continue
                normalised = normalise_command(command)
                return RuleMatch(rule, normalised, effect_key(rule.name, normalised))
    return None


_CURL_DATA = ("-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--json", "-F")
_CURL_DATA_LONG = ("--form", "--form-string", "-T", "--upload-file")
_WGET_DATA = ("--post-data", "--post-file", "--body-data", "--body-file")
_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _writes_to_remote(words: list[str]) -> bool:
    """True when a curl or wget command sends data or a write method to a non-loopback host."""
    program, args = words[0], words[1:]
    method: str | None = None
    sends_data = False
    urls: list[str] = []
    skip_next = False
    for index, word in enumerate(args):
        if skip_next:
            skip_next = False
            continue
        following = args[index + 1] if index + 1 < len(args) else ""
        if program == "curl":
            if word in ("-X", "--request"):
                method, skip_next = following.upper(), True
            elif word.startswith("-X") and len(word) > 2:
                method = word[2:].upper()
            elif word.startswith("--request="):
                method = word.split("=", 1)[1].upper()
            elif word in _CURL_DATA or word in _CURL_DATA_LONG:
                sends_data, skip_next = True, True
            elif word.startswith(("--data", "--json", "--form", "--upload-file")) or (
                word.startswith(("-d", "-F", "-T")) and len(word) > 2
            ):
                sends_data = True
            elif word in ("-G", "--get"):
                method = method or "GET"
        elif word.startswith("--method="):
            method = word.split("=", 1)[1].upper()
        elif word == "--method":
            method, skip_next = following.upper(), True
        elif word.startswith(_WGET_DATA):
            sends_data = True
        if not word.startswith("-") and not skip_next:
            urls.append(word)
    writes = method in _WRITE_METHODS if method is not None else sends_data
    if not writes:
        return False
    hosts = [_host_of(url) for url in urls]
    return not hosts or any(not _is_loopback(host) for host in hosts)


def _host_of(url: str) -> str:
    from urllib.parse import urlsplit

    parsed = urlsplit(url if "://" in url else f"http://{url}")
    return (parsed.hostname or "").lower()


def _is_loopback(host: str) -> bool:
    return (
        host in ("localhost", "::1", "0.0.0.0", "")
        or host.endswith(".localhost")
        or host.startswith("127.")
    )


# --- replies ----------------------------------------------------------------------------------


class HookReply(NamedTuple):
    """What the hook process prints and the code it exits with, in the harness's protocol."""

    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""
    recorded: tuple[str, ...] = ()


def _deny(reason: str) -> HookReply:
    """Claude Code's PreToolUse decision that blocks the call and tells the agent why."""
    document = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }
    return HookReply(0, stdout=json.dumps(document) + "\n", stderr=f"pitstop: {reason}\n")


def _block(reason: str) -> HookReply:
    """Fail closed: exit code 2 blocks the tool call; stderr is the reason Claude Code shows."""
    return HookReply(2, stderr=f"pitstop: {reason}\n")


def _observed(*what: str) -> HookReply:
    return HookReply(0, recorded=tuple(what))


def _fail_open(event: str, message: str) -> HookReply:
    return HookReply(0, stderr=f"pitstop: {event} not recorded: {message}\n")


# --- reading events ---------------------------------------------------------------------------


class HookInputError(UsageError):
    """The hook input is not the JSON object a harness sends."""


def parse_event(raw: bytes) -> dict[str, Any]:
    """One hook event: a JSON object; anything else (empty, truncated, not an object) is refused."""
    if not raw.strip():
        raise HookInputError("the hook input is empty; expected one JSON object on stdin")
    if len(raw) > MAX_INPUT_BYTES:
        raise HookInputError(f"the hook input is larger than {MAX_INPUT_BYTES} bytes")
    try:
        event = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HookInputError(f"the hook input is not valid JSON ({exc})") from exc
    if not isinstance(event, dict):
        raise HookInputError("the hook input is not a JSON object")
    return event


def _sniff_event(raw: bytes) -> str | None:
    """The event name of a damaged input, when it can still be read."""
    found = re.search(rb'"hook_event_name"\s*:\s*"([A-Za-z]+)"', raw[:4096])
    return found.group(1).decode() if found else None


def _text(event: Mapping[str, Any], key: str) -> str | None:
    value = event.get(key)
    return value if isinstance(value, str) and value else None


# --- the Claude Code hook ---------------------------------------------------------------------

OpenEngine = Callable[[str], "Engine"]


class HookContext:
    """Where a hook records: the store, the rules, the environment it runs in.

    A hook process that ends right after its answer (`tui.launch`) passes `keep_store_open`: it
    leaves the store open for the process exit, since closing SQLite's last connection
    checkpoints the WAL into the database (two more fsyncs) on every tool call; SQLite's
    auto-checkpoint and the next long-lived connection to close do it instead. Every write is
    committed before the answer.
    """

    def __init__(
        self,
        store: str | None = None,
        env: Mapping[str, str] | None = None,
        rules: tuple[Rule, ...] | None = None,
        config_path: Path | None = None,
        keep_store_open: bool = False,
    ) -> None:
        self.store = store
        self.env: Mapping[str, str] = dict(os.environ) if env is None else env
        self.rules = rules
        self.config_path = config_path
        self.keep_store_open = keep_store_open
        self._engine: Engine | None = None

    def engine(self, harness: str) -> Engine:
        """Open the store on first use, as the harness through the hook interface."""
        if self._engine is None:
            from core.engine import Engine
            from core.models import Interface

            self._engine = Engine(self.store, interface=Interface.HOOK, actor=harness)
        return self._engine

    def rule_list(self) -> tuple[Rule, ...]:
        """The rules in force (loaded once)."""
        if self.rules is None:
            self.rules = load_rules(self.config_path)
        return self.rules

    def close(self) -> None:
        """Close the store if it was opened (unless it is kept open for the process exit)."""
        if self._engine is not None and not self.keep_store_open:
            self._engine.close()
            self._engine = None


def claude_code(raw: bytes, context: HookContext, event_hint: str | None = None) -> HookReply:
    """Answer one Claude Code hook event (JSON on stdin) in Claude Code's hook protocol."""
    try:
        event = parse_event(raw)
    except HookInputError as exc:
        name = event_hint or _sniff_event(raw)
        if name in GUARD_EVENTS:
            return _block(f"{exc.message}; the tool call is blocked to be safe")
        return _fail_open(name or "hook event", exc.message)
    name = _text(event, "hook_event_name") or event_hint or ""
    try:
        return _dispatch(name, event, context)
    except PitstopError as exc:
        return _failure(name, exc.message)
    except Exception as exc:  # an internal error never breaks the agent, nor lets a guard pass
        return _failure(name, f"internal error ({type(exc).__name__}: {exc})")
    finally:
        context.close()


def _failure(name: str, message: str) -> HookReply:
    if name in GUARD_EVENTS:
        return _block(
            f"cannot decide whether this command may run ({message}); it is blocked to be safe. "
            "Fix the cause, or run it yourself outside the agent"
        )
    return _fail_open(name or "hook event", message)


def _dispatch(name: str, event: Mapping[str, Any], context: HookContext) -> HookReply:
    tool = _text(event, "tool_name")
    if name == "PreToolUse":
        return _pre_tool_use(event, context) if tool == "Bash" else HookReply()
    if name in ("PostToolUse", "PostToolUseFailure"):
        return (
            _post_tool_use(event, context, failed=name == "PostToolUseFailure")
            if (tool == "Bash")
            else HookReply()
        )
    if name == "SessionStart":
        return _session_start(event, context)
    if name in ("Stop", "SubagentStop", "PreCompact", "SessionEnd"):
        return _checkpoint_event(name, event, context)
    if name == "Notification":
        return _notification(event, context)
    if name == "UserPromptSubmit":
        task = _task_for(context, CLAUDE_CODE, event)
        if task is None:
            return HookReply()
        context.engine(CLAUDE_CODE).set_task_activity(
            task.id, _status("running"), "the user answered the agent"
        )
        return _observed("running")
    return HookReply()  # an event Pitstop does not use: nothing to do


def _status(value: str) -> Any:
    from core.models import TaskStatus

    return TaskStatus(value)


def _task_for(
    context: HookContext, harness: str, event: Mapping[str, Any], *, link: bool = False
) -> Task | None:
    """Find or create the task this session feeds; None outside a git repository."""
    engine = context.engine(harness)
    session = _text(event, "session_id")
    transcript = _text(event, "transcript_path")
    cwd = _text(event, "cwd") or os.getcwd()
    task = engine.session_task(harness, session) if session else None
    if task is not None and task.status.is_final:
        task = None
    if task is None and context.env.get("PITSTOP_TASK"):
        # A session launched by `pitstop resume` feeds the task it resumes.
        from core.errors import NotFoundError

        try:
            resumed = engine.get_task(context.env["PITSTOP_TASK"])
        except NotFoundError:
            resumed = None
        if resumed is not None and not resumed.status.is_final:
            task, link = resumed, True
    if task is None:
        task = _start_task(engine, harness, event, cwd, session)
        if task is None:
            return None
        link = True
    if session and link:
        engine.link_harness_session(task.id, harness, session, transcript_path=transcript, cwd=cwd)
    return task


def _start_task(
    engine: Engine, harness: str, event: Mapping[str, Any], cwd: str, session: str | None
) -> Task | None:
    from core.models import NamedVersion

    label = "Claude Code" if harness == CLAUDE_CODE else "Codex"
    model = _text(event, "model")
    version = engine.config.harness(harness).get("version") or None
    try:
        return engine.start_task(
            repo=cwd,
            objective=f"{Path(cwd).name}: {label} session {(session or 'unknown')[:8]}",
            harness=NamedVersion(harness, version),
            model=NamedVersion(model) if model else None,
        )
    except NotAGitRepoError:
        return None


def _session_start(event: Mapping[str, Any], context: HookContext) -> HookReply:
    task = _task_for(context, CLAUDE_CODE, event, link=True)
    if task is None:
        return HookReply(
            0, stderr="pitstop: not in a git repository; this session is not tracked\n"
        )
    context.engine(CLAUDE_CODE).set_task_activity(
        task.id, _status("running"), f"session started ({_text(event, 'source') or 'startup'})"
    )
    return _observed(f"task {task.id}")


_CHECKPOINT_REASONS = {
    "Stop": ("turn", "the agent finished a turn"),
    "SubagentStop": ("turn", "a subagent finished"),
    "PreCompact": ("milestone", "before the context is compacted"),
    "SessionEnd": ("interrupt", "the session ended"),
}


def _checkpoint_event(name: str, event: Mapping[str, Any], context: HookContext) -> HookReply:
    from core.engine import CheckpointRequest
    from core.models import CheckpointReason

    task = _task_for(context, CLAUDE_CODE, event)
    if task is None:
        return HookReply()
    reason, note = _CHECKPOINT_REASONS[name]
    detail = _text(event, "trigger") or _text(event, "reason")
    result = context.engine(CLAUDE_CODE).checkpoint(
        task.id,
        CheckpointRequest(
            reason=CheckpointReason(reason),
            note=f"{note} ({detail})" if detail else note,
            force=name == "SessionEnd",  # the task must show as paused, even with no change
        ),
    )
    if result.checkpoint is None:
        return _observed(f"skipped: {result.skipped}")
    return _observed(f"checkpoint {result.checkpoint.ref}")


def _notification(event: Mapping[str, Any], context: HookContext) -> HookReply:
    kind = _text(event, "notification_type")
    message = _text(event, "message") or ""
    if kind not in _WAITING_TYPES and not _WAITING_TEXT.search(message):
        return HookReply()
    task = _task_for(context, CLAUDE_CODE, event)
    if task is None:
        return HookReply()
    context.engine(CLAUDE_CODE).set_task_activity(
        task.id, _status("waiting"), f"the agent waits for its user: {message[:120]}"
    )
    return _observed("waiting")


def _bash_command(event: Mapping[str, Any]) -> str | None:
    tool_input = event.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    command = tool_input.get("command")
    return command if isinstance(command, str) else None


def _pre_tool_use(event: Mapping[str, Any], context: HookContext) -> HookReply:
    command = _bash_command(event)
    if command is None:
        raise HookInputError("a Bash PreToolUse event without tool_input.command")
    found = match_command(command, context.rule_list())
    if found is None:
        return HookReply()  # not an action outside the sandbox: Claude Code's own rules apply
    task = _task_for(context, CLAUDE_CODE, event)
    if task is None:
        return HookReply(
            0, stderr="pitstop: not in a git repository; this command is not guarded\n"
        )
    return guard_command(context.engine(CLAUDE_CODE), task.id, found, _text(event, "tool_use_id"))


def guard_command(
    engine: Engine, task_id: str, found: RuleMatch, tool_use_id: str | None = None
) -> HookReply:
    """Decide whether a matched command may run now; start its side effect when it may."""
    from core.models import ApprovalState, EffectState, Risk
    from core.redaction.free_text import persistable

    one_line = re.sub(r"[\x00-\x1f\x7f]+", " ", persistable(found.command)).strip()
    shown = one_line if len(one_line) <= 300 else one_line[:297] + "..."
    effect = engine.propose_effect(
        task_id,
        found.key,
        found.rule.name,
        target=one_line[:2000],
        needs_approval=found.rule.approval,
    ).effect
    settle = (
        f"`pitstop effect confirm --task {task_id} --key {found.key} --reason TEXT` if it "
        f"happened, `pitstop effect fail …` if it did not"
    )
    if effect.state is EffectState.CONFIRMED:
        return _deny(
            f"already done at {effect.finished_at or effect.updated_at}: `{shown}` succeeded "
            f"before (side effect {found.key} of task {task_id} is confirmed); do not run it "
            "again — go on from its result. If this is a new action and not a repeat, spell "
            "out what is new (for a push: the commit, `git push origin <sha>:<branch>`)"
        )
    if effect.state in (EffectState.IN_PROGRESS, EffectState.UNCERTAIN):
        return _deny(
            f"`{shown}` was started at {effect.started_at} and its outcome is unknown (side "
            f"effect {found.key} of task {task_id} is {effect.state.value}); check whether it "
            f"happened, then an operator settles it: {settle}"
        )
    if found.rule.approval or effect.needs_approval:
        requested = [a for a in engine.list_approvals(task_id) if a.effect_key == found.key]
        latest = requested[-1] if requested else None
        if latest is None or latest.state is ApprovalState.EXPIRED:
            approval = engine.request_approval(
                task_id,
                f"run `{shown}` ({found.rule.name}), asked by the agent",
                effect_key=found.key,
                risk=Risk.HIGH,
                checkpoint=True,
            )
            return _deny(
                f"waiting for approval {approval.id}: `{shown}` acts outside the sandbox "
                f"({found.rule.name}). An approver runs `pitstop approval approve {approval.id} "
                "--reason TEXT`; then run the same command again. Meanwhile go on with other "
                "work or stop here"
            )
        if latest.state is ApprovalState.PENDING:
            return _deny(
                f"waiting for approval {latest.id} (requested at {latest.requested_at}); run "
                "the same command again once it is approved"
            )
        if latest.state is ApprovalState.REJECTED:
            return _deny(
                f"`{shown}` was rejected by {latest.decided_by} ({latest.id}: {latest.reason}); "
                "do not run it"
            )
    engine.move_effect(
        task_id,
        found.key,
        EffectState.IN_PROGRESS,
        note=f"Claude Code tool call {tool_use_id}" if tool_use_id else None,
    )
    return _observed(f"started {found.key}")


def _tool_output(event: Mapping[str, Any], failed: bool) -> tuple[bytes, int | None, bool]:
    """The output, exit status and whether it was interrupted, from a (failed) tool response."""
    if failed:
        error = event.get("error")
        text = error if isinstance(error, str) else json.dumps(error)
        said = re.search(r"[Ee]xit code:? (\d+)", text)
        interrupted = bool(event.get("is_interrupt"))
        return text.encode("utf-8", "replace"), int(said.group(1)) if said else 1, interrupted
    response = event.get("tool_response")
    if isinstance(response, str):
        return response.encode("utf-8", "replace"), 0, False
    if not isinstance(response, dict):
        return b"", None, False
    parts = [response.get(k) for k in ("stdout", "stderr", "output")]
    output = "\n".join(p for p in parts if isinstance(p, str) and p)
    code: int | None = 0
    for key in ("exit_code", "exitCode", "returncode", "return_code"):
        value = response.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            code = value
            break
    interrupted = response.get("interrupted") is True
    return output.encode("utf-8", "replace"), None if interrupted else code, interrupted


def _post_tool_use(event: Mapping[str, Any], context: HookContext, *, failed: bool) -> HookReply:
    from core.models import EffectState

    command = _bash_command(event)
    if command is None:
        raise HookInputError("a Bash PostToolUse event without tool_input.command")
    task = _task_for(context, CLAUDE_CODE, event)
    if task is None:
        return HookReply()
    engine = context.engine(CLAUDE_CODE)
    if task.status.value in ("waiting", "paused"):  # the user let it go on: it works again
        engine.set_task_activity(task.id, _status("running"), "the agent ran a command")
    output, exit_code, interrupted = _tool_output(event, failed)
    tool_input = event.get("tool_input")
    description = tool_input.get("description") if isinstance(tool_input, dict) else None
    response = event.get("tool_response")
    duration = response.get("duration_ms") if isinstance(response, dict) else None
    item = engine.add_evidence_output(
        task.id,
        output,
        argv=[command],
        cwd=_text(event, "cwd"),
        exit_code=exit_code,
        duration_s=duration / 1000 if isinstance(duration, int | float) else None,
        label=description if isinstance(description, str) and description else None,
    )
    recorded = [f"evidence {item.id}"]
    found = match_command(command, context.rule_list())
    if found is not None:
        from core.errors import NotFoundError

        try:
            effect = engine.get_effect(task.id, found.key)
        except NotFoundError:
            effect = None
        if effect is not None and effect.state is EffectState.IN_PROGRESS:
            outcome = (
                EffectState.UNCERTAIN
                if interrupted
                else EffectState.CONFIRMED
                if exit_code == 0
                else EffectState.FAILED
            )
            engine.move_effect(
                task.id,
                found.key,
                outcome,
                note=f"exit {exit_code}; output in evidence {item.id}",
            )
            recorded.append(f"{found.key} {outcome.value}")
    return _observed(*recorded)


# --- Codex ------------------------------------------------------------------------------------


def codex_notify(payload: str, context: HookContext) -> HookReply:
    """Codex's notify program: after each agent turn, evidence of the turn and a checkpoint.

    Codex passes one JSON argument (`type`, `thread-id`, `turn-id`, `cwd`, `input-messages`,
    `last-assistant-message`). It exposes no event before a command runs, so nothing is guarded.
    """
    try:
        event = parse_event(payload.encode("utf-8", "surrogateescape"))
    except HookInputError as exc:
        return _fail_open("Codex notification", exc.message)
    if event.get("type") != "agent-turn-complete":
        return HookReply()
    try:
        return _codex_turn(event, context)
    except PitstopError as exc:
        return _fail_open("Codex notification", exc.message)
    except Exception as exc:
        return _fail_open("Codex notification", f"internal error ({type(exc).__name__}: {exc})")
    finally:
        context.close()


def _codex_transcript(thread_id: str, env: Mapping[str, str]) -> str | None:
    """Codex keeps each thread in `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<thread>.jsonl`."""
    home = Path(env.get("CODEX_HOME") or Path.home() / ".codex")
    if not re.fullmatch(r"[A-Za-z0-9-]{1,80}", thread_id):
        return None
    found = sorted((home / "sessions").glob(f"*/*/*/rollout-*{thread_id}.jsonl"))
    return str(found[-1]) if found else None


def _codex_turn(event: Mapping[str, Any], context: HookContext) -> HookReply:
    from core.engine import CheckpointRequest
    from core.models import CheckpointReason

    thread = _text(event, "thread-id")
    normalised = {
        "session_id": thread,
        "transcript_path": _codex_transcript(thread, context.env) if thread else None,
        "cwd": _text(event, "cwd"),
    }
    task = _task_for(context, CODEX, normalised, link=True)
    if task is None:
        return HookReply()
    engine = context.engine(CODEX)
    message = event.get("last-assistant-message")
    inputs = event.get("input-messages")
    prompt = (
        inputs[-1] if isinstance(inputs, list) and inputs and isinstance(inputs[-1], str) else ""
    )
    recorded = []
    if isinstance(message, str) and message:
        item = engine.add_evidence_output(
            task.id,
            message.encode("utf-8", "replace"),
            argv=["codex", "turn", _text(event, "turn-id") or "?"],
            cwd=_text(event, "cwd"),
            label=f"Codex turn: {prompt[:80]}" if prompt else "Codex turn",
        )
        recorded.append(f"evidence {item.id}")
    result = engine.checkpoint(
        task.id, CheckpointRequest(reason=CheckpointReason.TURN, note="Codex finished a turn")
    )
    recorded.append(f"checkpoint {result.checkpoint.ref}" if result.checkpoint else "skipped")
    return _observed(*recorded)


# --- installing into Claude Code's settings ---------------------------------------------------


def hook_command(event: str, program: str = "pitstop") -> str:
    """The command line Claude Code runs for one event."""
    return f"{program} hook claude-code --event {event}"


def is_pitstop_hook(hook: Any) -> bool:
    """True for a hook entry that Pitstop installed (`… pitstop hook claude-code …`)."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    words = hook["command"].split()
    return (
        len(words) >= 3
        and os.path.basename(words[0]) == "pitstop"
        and words[1:3] == ["hook", CLAUDE_CODE]
    )


def settings_path(scope: str, project_dir: Path | None = None) -> Path:
    """`.claude/settings.json` of the project (its git top level) or `~/.claude/settings.json`."""
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    if scope != "project":
        raise UsageError(f"unknown scope {scope!r}: use --project or --user")
    start = (project_dir or Path.cwd()).absolute()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate / ".claude" / "settings.json"
    return start / ".claude" / "settings.json"


def _read_settings(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise UsageError(
            f"{path} is not valid JSON ({exc}); fix it first, nothing changed"
        ) from exc
    if not isinstance(data, dict):
        raise UsageError(f"{path} does not hold a JSON object; nothing changed")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise UsageError(f'{path}: "hooks" is not an object of event lists; nothing changed')
    return data


def _write_settings(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.pitstop-tmp")
    temporary.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if path.exists():
        os.chmod(temporary, path.stat().st_mode & 0o7777)
    os.replace(temporary, path)


def installed_events(path: Path) -> list[str]:
    """The events for which the settings file runs Pitstop's hook."""
    data = _read_settings(path)
    return [
        event
        for event, groups in data.get("hooks", {}).items()
        if any(
            is_pitstop_hook(hook)
            for group in groups
            if isinstance(group, dict)
            for hook in group.get("hooks", [])
        )
    ]


def install(path: Path, program: str = "pitstop") -> list[str]:
    """Add Pitstop's hook to every event it uses, leaving other hooks as they are; idempotent.

    Returns the events added (empty when everything was already installed: the file is then
    not rewritten).
    """
    data = _read_settings(path)
    present = set(installed_events(path)) if path.exists() else set()
    added = []
    hooks: dict[str, Any] = data.setdefault("hooks", {})
    for event, matcher in CLAUDE_CODE_EVENTS:
        if event in present:
            continue
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [
            {"type": "command", "command": hook_command(event, program), "timeout": HOOK_TIMEOUT_S}
        ]
        hooks.setdefault(event, []).append(group)
        added.append(event)
    if added:
        _write_settings(path, data)
    return added


def uninstall(path: Path) -> list[str]:
    """Remove exactly Pitstop's hooks (and the groups and events only they filled); idempotent."""
    if not path.exists():
        return []
    data = _read_settings(path)
    hooks = data.get("hooks", {})
    removed = []
    for event in list(hooks):
        groups = hooks[event]
        kept_groups = []
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept_groups.append(group)
                continue
            kept = [hook for hook in group["hooks"] if not is_pitstop_hook(hook)]
            if len(kept) == len(group["hooks"]):
                kept_groups.append(group)
            elif kept:
                kept_groups.append({**group, "hooks": kept})
        if len(kept_groups) != len(groups) or kept_groups != groups:
            removed.append(event)
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
    if not removed:
        return []
    if not hooks:
        del data["hooks"]
    _write_settings(path, data)
    return removed


def codex_notify_installed(env: Mapping[str, str] | None = None) -> bool | None:
    """Whether Codex's `config.toml` runs `pitstop hook codex` as its notify program."""
    import tomllib

    environment = env if env is not None else os.environ
    path = Path(environment.get("CODEX_HOME") or Path.home() / ".codex") / "config.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    notify = data.get("notify")
    return isinstance(notify, list) and any("pitstop" in str(word) for word in notify[:2])
