"""`pitstop redact`: the secret redactor as a filter, for people and harnesses.

    some-command 2>&1 | pitstop redact > safe.log
    pitstop redact --stats < build.log > build.redacted.log
    pitstop redact --rules            # every rule: name, family, the literals it is gated on

It reads standard input and writes the redacted stream to standard output as it goes (constant
memory: what is held back is at most an incomplete line or a PEM block being checked), with the
same rules and the same result as evidence capture (`core.redaction.redact`). Bytes that are not
part of a secret pass through unchanged, binary and non-UTF-8 data included.
"""

from __future__ import annotations

import json
import os
import sys
from typing import BinaryIO

import click

CHUNK = 64 * 1024


@click.command()
@click.option("--stats", is_flag=True, help="Print how many secrets each rule redacted to stderr.")
@click.option("--json", "as_json", is_flag=True, help="With --stats or --rules: JSON instead.")
@click.option(
    "--rules", "list_rules", is_flag=True, help="List the rules (name, family, keywords) and exit."
)
def redact(stats: bool, as_json: bool, list_rules: bool) -> None:
    """Redact secrets from standard input to standard output.

    Each secret (cloud, SaaS and AI providers' tokens, JWTs, private keys, webhooks,
    Authorization headers, URL and connection-string passwords, values after a credential-like
    key) becomes [REDACTED:<rule>]; `--rules` lists the rules.
    Exit codes: 0 done; 1 read or write error; 130 interrupted.
    """
    if list_rules:
        _print_rules(as_json)
        return
    from core.redaction.redact import RULESET_VERSION, StreamRedactor

    redactor = StreamRedactor()
    source = sys.stdin.buffer.fileno()
    sink = sys.stdout.buffer
    try:
        while True:
            chunk = os.read(source, CHUNK)  # returns what is there: a live pipe is not delayed
            if not chunk:
                break
            _write(sink, redactor.feed(chunk))
        _write(sink, redactor.flush())
    except BrokenPipeError:
        _quiet_stdout()  # the reader went away (`| head`): not an error worth a traceback
        return
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except OSError as exc:
        raise click.ClickException(f"cannot redact: {exc.strerror or exc}") from None
    if stats:
        counts = redactor.counts
        total = sum(counts.values())
        if as_json:
            document = {"ruleset": RULESET_VERSION, "redacted": total, "by_rule": counts}
            click.echo(json.dumps(document, sort_keys=True), err=True)
        else:
            noun = "secret" if total == 1 else "secrets"
            click.echo(f"redacted {total} {noun} (ruleset {RULESET_VERSION})", err=True)
            for rule, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
                click.echo(f"  {rule:<24} {count}", err=True)


def _print_rules(as_json: bool) -> None:
    """The rule listing: one line per rule, by family in priority order."""
    from core.redaction.redact import RULESET_VERSION, rule_listing

    rules = rule_listing()
    if as_json:
        document = {"ruleset": RULESET_VERSION, "rules": [rule._asdict() for rule in rules]}
        click.echo(json.dumps(document, indent=2))
        return
    families = len({rule.family for rule in rules})
    click.echo(f"ruleset {RULESET_VERSION}: {len(rules)} rules in {families} families")
    click.echo(f"{'FAMILY':<20} {'RULE':<28} KEYWORDS")
    for rule in rules:
        click.echo(f"{rule.family:<20} {rule.name:<28} {', '.join(rule.keywords)}")


def _write(sink: BinaryIO, data: bytes) -> None:
    if data:
        sink.write(data)
        sink.flush()


def _quiet_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush stays silent."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
