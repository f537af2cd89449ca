"""The guard's rule list: which shell commands act outside the sandbox, and which need approval.

The defaults cover the usual ways an agent reaches the world (`git push`, publishing a package,
a deploy, an HTTP write…); `[hooks.rules.NAME]` tables in `config.toml` change, disable or add
rules. The list is data, so deciding whether a command is guarded (`core.harness.commands`)
never has to change when a team adds its own deploy command.

Standard library only at load time: every PreToolUse hook reads this list.
"""

from __future__ import annotations

from pathlib import Path

from core.errors import UsageError

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple


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
    tables = _rule_tables(path)
    if tables is None:
        return DEFAULT_RULES
    rules = {rule.name: rule for rule in DEFAULT_RULES}
    for name, table in tables.items():
        _check_table(path, name, table)
        if table.get("enabled", True) is False:
            rules.pop(name, None)
            continue
        rules[name] = _rule_from_table(path, name, table, rules.get(name))
    return tuple(rules.values())


def _rule_tables(path: Path) -> dict[str, Any] | None:
    """The `[hooks.rules]` tables of a config file; None when the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    import tomllib  # only when a config file exists

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"cannot read {path}: {exc}; fix or remove that file") from exc
    tables = data.get("hooks", {}).get("rules", {})
    if not isinstance(tables, dict):
        raise UsageError(f"{path}: [hooks.rules] must hold tables, e.g. [hooks.rules.git-push]")
    return tables


def _check_table(path: Path, name: str, table: Any) -> None:
    """Refuse a rule table that is not a table, has an unknown key or a flag that is not a bool."""
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


def _rule_from_table(path: Path, name: str, table: dict[str, Any], base: Rule | None) -> Rule:
    """The rule a table describes: its own keys, the default rule `base` for the others."""
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
    return Rule(
        name=name,
        match=tuple(tuple(p.split()) for p in patterns) if patterns else base.match,  # type: ignore[union-attr]
        approval=table.get("approval", base.approval if base else True),
        http_write=table.get("http_write", base.http_write if base else False),
    )
