"""The redaction rules and the value checks' parameters, as data.

Issues 13 and 16 ask for the rules as data rather than code: each family of token formats is one
TOML file beside this module (``cloud.toml``, ``code-hosting.toml``, ``generic.toml``…), every
rule in it with positive and negative examples that a test runs. ``build.py`` turns the files
into ``table.py`` (Python literals: a harness hook that redacts one line unmarshals them instead
of parsing TOML), and :mod:`core.redaction.ruleset` turns the records into runnable rules. The
word lists the value checks look for are data here too.

Each record is a dict (checked by mypy as :class:`RuleRecord`); a field left out takes its
default:

- ``name``: what a redaction is called (``[REDACTED:<name>]``); ``family``: its file.
- ``keywords``: lowercase ASCII literals, one of which every match contains (the literal gate).
- ``pattern``: the regex, ``re.ASCII`` (and ``re.IGNORECASE`` with ``ignore_case``). No character
  class may match ``\\n`` or ``\\r``, and every quantifier is bounded (``MAX_MATCH``).
- ``select``: how a match becomes what is redacted: ``"match"`` (the default: the whole match,
  when the first of ``parts`` that matched, or the match itself without ``parts``, passes
  ``check``), ``"group"`` (only the part ``parts[0]``, when it passes ``check``), or one of the
  context rules' own selectors: ``"curl-credentials"`` (the password of ``-u user:password``)
  and ``"generic-secret"`` (the value after a credential-like key).
- ``check``: a value check by name (``"random-enough"``, ``"looks-like-secret"``,
  ``"url-password"``, ``"pem-body"``; absent: none), ``entropy`` its threshold where it has one.
- ``anchored``: try the regex only where one of its starts occurs (``pattern.match``) instead of
  scanning a block holding a keyword; the starts are ``start_words`` (default: the keywords)
  in ``start_form``: ``"word"`` (the match starts with the word, or ``start_offset`` characters
  from it: ``-32`` for a key whose literal follows 32 hex digits), ``"word+hex-pair"`` (the word
  and two hex digits) or ``"key-name"`` (a key name and what the generic rule allows after one).
- ``locator``: anchored rules, optionally: a case-sensitive, fixed-width regex and its width that
  the start of every match fullmatches; the Hyperscan gate finds these places instead of the
  starts (which are many more: ``ac`` + two hex digits is in every hex id).

Whatever a rule selects is extended over the token characters that follow it
(:data:`TOKEN_TAIL`; with ``tail = "value"``, a header's value: anything but blanks, quotes,
``,`` and ``;``), so a secret longer than its regex allows is still redacted whole.
"""

from __future__ import annotations

from core.redaction.rules.table import RULE_TABLE as _TABLE

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)

RULESET_VERSION = "2026.12.2"
"""Version of the rule set; callers record it with everything they redact.

2026.12.2: a known token's random body holding ``xxxx`` is still a token (a mask is x's for a
quarter of the body, or more); elevenlabs-key and recharge-key are tried only where their keys
can start (``sk_`` and two hex digits; ``sk_1x``…, ``sk_test_``), not at every ``task_`` of a
log.

2026.12.1 (issue 16): rules as data, one file per family; about 130 token formats (the union of
the gitleaks, trufflehog, noseyparker and detect-secrets providers that have a format of their
own); keyed values redacted whatever their case or punctuation; whole values; escape sequences,
wrapped lines and bare AWS secret keys next to their key id.

2026.11.2: the aws-secret-access-key rule is gated on every spelling its regex accepts
(``secret-access-key``, ``secret_accesskey``, …), not only two of them.
"""


if TYPE_CHECKING:  # a record is a plain dict at run time: no class to build on a hook's path
    from typing import NotRequired, TypedDict

    class RuleRecord(TypedDict):
        """One rule as data (the fields are described in the module docstring)."""

        name: str
        family: str
        keywords: tuple[str, ...]
        pattern: str
        select: NotRequired[str]  # default "match"
        parts: NotRequired[tuple[str, ...]]
        check: NotRequired[str]
        entropy: NotRequired[float]
        ignore_case: NotRequired[bool]
        anchored: NotRequired[bool]
        start_words: NotRequired[tuple[str, ...]]  # default: the keywords
        start_form: NotRequired[str]  # default "word"
        start_offset: NotRequired[int]  # default 0
        tail: NotRequired[str]  # default "token"
        locator: NotRequired[tuple[str, int]]


RULE_TABLE: tuple[RuleRecord, ...] = _TABLE  # type: ignore[assignment]
"""Every rule, in priority order: where matches overlap, the redaction is named after the
earliest rule among them (token formats first, context rules next, the generic rule last)."""

GENERIC_KEY_NAMES: tuple[str, ...] = next(
    (record["start_words"] for record in RULE_TABLE if record["name"] == "generic-secret"), ()
)
"""The key names the generic rule looks after (its ``kw`` group lists them in this order)."""


# --- what the value checks look for ----------------------------------------------------------

PEM_MIN_BODY = 32
"""Base64 characters a BEGIN…END block needs to count as a key (``anything`` does not)."""
PEM_MIN_TRUNCATED = 64
"""Base64 characters a block cut short (no END line) needs to be redacted as a truncated key."""

SECRET_MIN_LENGTH = 8
"""Shortest value after a secret-looking key that can be a credential."""
NUMBER_SECRET_DIGITS = 16
"""Digits a value that is only a number needs to be taken for a secret (``port: 5432``,
``max_tokens=4096``, ``timeout_secret_rotation: 86400`` are settings)."""

PLACEHOLDER_PARTS = (
    "xxxx",
    "****",
    "####",
    "....",
    "1234",
    "abcdef",
    "example",
    "sample",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "dummy",
    "redacted",
    "your_",
    "your-",
    "yourtoken",
    "yourpass",
    "yourkey",
    "secret",
    "password",
    "passwd",
    "token",
    "bearer",
)
"""Lowercase pieces that mark a value as a placeholder or a mask."""
PLACEHOLDER_MAX = 64
"""Longest value the placeholder pieces are looked for in: placeholders are short, and a long
random value holds ``token`` or ``1234`` now and then (a long mask repeats a few characters,
which the last check catches)."""

TEMPLATE_PATTERN = (
    r"\$\{[^}\s]{1,64}\}|\{\{.{0,64}?\}\}|\$\([^)\s]{1,64}\)|%\([A-Za-z_]{1,32}\)[sdr]"
    r"|<[A-Za-z][A-Za-z0-9 _.-]{0,40}>"
)
"""Templates inside a value (``${DB_PASSWORD}``, ``{{ secrets.X }}``, ``$(cat f)``, ``%(pw)s``,
``<your token>``): the value is filled in elsewhere."""
REFERENCE_PATTERN = (
    r"\$[A-Za-z_][A-Za-z0-9_]{0,63}|\$[({][^\s]{0,64}|%[A-Za-z_][A-Za-z0-9_]{0,63}%"
    r"|\{[A-Za-z_0-9][A-Za-z0-9_.]{0,63}\}|<[A-Za-z_][^\s<]{0,64}"
    r"|\[[A-Za-z_ -]{1,40}\]|`[^`]{1,64}`"
)
"""Whole values that name another value (``$TOKEN``, ``$(gcloud …``, ``%APPDATA%``, ``{token}``,
``<Openverse API token>`` cut at its first blank, ``[hidden]``, a command in backquotes)."""

PLACEHOLDER_WORDS = frozenset(
    {
        "pass",
        "pwd",
        "user",
        "username",
        "login",
        "admin",
        "root",
        "guest",
        "test",
        "none",
        "null",
        "nil",
        "true",
        "false",
        "yes",
        "no",
        "on",
        "off",
        "undefined",
        "empty",
        "string",
        "required",
        "optional",
        "foo",
        "bar",
        "foobar",
        "xxx",
        "yyy",
        "zzz",
        "abc",
        "key",
        "apikey",
        "api_key",
        "value",
    }
)
"""Whole values (lowercased) that are never a credential."""

CODE_CHARS = frozenset("+(){}[]:;,=`")
"""Characters that, in a value with a space, show it is code between two string literals."""

UUID_PATTERN = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
WORDISH_PATTERN = (
    r"[A-Z]?[a-z]+(?:[A-Z][a-z]+)*"  # word, camelCase, PascalCase
    r"|[A-Z][A-Z0-9]*(?:[_.-][A-Z0-9]+)+"  # CONSTANT_CASE, KEBAB-CASE
    r"|_*[a-z][a-z0-9]*(?:[_.-][a-z0-9]+)+_*"  # snake_case, kebab-case, dotted.names
)
"""A word or an identifier (a value matching it whole is a name, not a secret)."""
FILENAME_PATTERN = (
    r"[\w.-]+\.(?:pem|key|crt|cer|p12|pfx|jks|json|ya?ml|txt|env|keystore|conf|cfg|ini)"
)
PATH_SEGMENT_PATTERN = r"[a-z0-9_.@+-]*|[A-Za-z0-9_@+-]*\.[A-Za-z0-9_.@+-]*"

KEY_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
"""Characters of the identifier a generic key name is part of (``DB_PASSWORD``, ``app.token``)."""
QUALIFIED_KEY_PATTERN = (
    r"(?:api|secret|access|private|client|auth|encryption|signing|master|account|storage|app|"
    r"license|session|service|shared|subscription|webhook|consumer|signature|hmac|bot|admin|"
    r"x-api|user|deploy|write|read|root)[_.-]?key"
)
"""A bare ``key`` counts inside a name like these (``api_key``, not ``primary_key``)..."""
UNQUALIFIED_KEY_MIN = 20
"""...or before a random value (letters and digits, high entropy) of at least this length."""
REJECTED_KEY_PARTS = ("public", "pubkey", "csrf", "xsrf", "nonce")
"""Key names holding one of these are not secrets (public keys, anti-forgery tokens)."""
WHOLE_WORD_KEY_NAMES = frozenset({"pat", "pw"})
"""Generic key names that count only as a word of the key (``GITHUB_PAT``, ``db_pw``), not
inside one (``compat``, ``pattern``)."""


CURL_PLACEHOLDERS = frozenset(
    {"user", "username", "pass", "password", "passwd", "token", "secret", "test", "xxx", "yyy"}
)
"""``curl -u`` user names or passwords that are placeholders."""
CURL_PLACEHOLDER_PARTS = ("xxxx", "****", "example", "your")
"""Lowercase pieces that mark a ``curl -u`` credential as a placeholder."""

URL_PLACEHOLDERS = frozenset(
    {"pass", "password", "passwd", "pwd", "secret", "token", "changeme", "user", "username"}
)
"""Passwords in URL userinfo that are placeholders."""
URL_PLACEHOLDER_PARTS = ("xxx", "***", "${", "{{", "your")
"""Lowercase pieces that mark a URL's password as a placeholder."""

TOKEN_TAIL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")
"""Characters a redaction is extended over when they follow it (base64, base64url, hex)."""

TOKEN_EXAMPLE_PARTS = ("example",)
"""Lowercase pieces that mark the body of a known token format as an example (masks are told
by how much of the body their runs of x's make)."""
