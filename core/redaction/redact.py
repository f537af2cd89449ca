"""Secret redaction: keyword-gated compiled rules, applied before any byte is persisted or shown.

DESIGN §3 invariant 2 (secrets never reach disk in clear) and §9 (gate each rule on a literal
keyword before running its regex). Every rule has a name, a tuple of lowercase literal keywords and
a compiled regex; a rule's regex runs only where one of its keywords occurs in the lowercased text,
and every match the regex can produce contains one of those keywords. A secret is replaced by
``[REDACTED:<rule>]``; where a prefix such as ``Authorization: Bearer`` or ``password=`` is only
context, just the secret part is replaced.

Guarantees:

- **Line-local rules.** No rule's regex can match across ``\\n`` or ``\\r`` (every character class
  excludes both), so a stream can be processed a block of complete lines at a time, and ``\\r``
  progress bars, binary data and non-UTF-8 bytes pass through byte-for-byte where nothing matches.
- **PEM private keys across lines.** A ``-----BEGIN … PRIVATE KEY-----`` line starts a held block
  that ends at ``-----END … PRIVATE KEY-----`` (redacted whole), at the first line that cannot be
  part of a key (redacted as a truncated key when it already held key material, else released
  untouched), or at :data:`PEM_HOLD_CAP` held characters (redacted at once; the key lines that
  follow are dropped up to the END line).
- **Streaming equals whole.** :class:`StreamRedactor` and :func:`redact_bytes` run the same machine;
  every decision it makes depends only on the data, never on where chunks were split, so any
  chunking gives exactly ``redact_bytes(whole)``. Lines longer than :data:`MAX_LINE` are processed
  in overlapping windows, which bounds memory.
- **Linear time.** Quantifiers are bounded or possessive and most token rules check a left
  boundary, so no input makes a rule backtrack more than a bounded amount per keyword occurrence;
  a run of BEGIN lines that are not keys reuses the block's scan instead of repeating it.
- **Overlaps** between rules become one redaction, named after the most specific rule (token
  formats before context rules such as ``authorization-header``, the generic rule last).

API: :func:`redact_text` (with findings in original offsets), :func:`redact_bytes`,
:class:`StreamRedactor` (``feed``/``flush``, per-rule ``counts``), :func:`redact_argv` (a command
line, each argument seen next to its neighbours: ``-u user:pw``, ``--password pw``), and
:data:`RULESET_VERSION`, which callers record with everything they redact.

Bytes are handled as latin-1 text (one character per byte), so ``redact_bytes`` round-trips every
byte exactly; the rules themselves are ASCII.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from typing import TYPE_CHECKING, NamedTuple  # typing: every caller has loaded it already

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    import ahocorasick_rs

__all__ = [
    "ACCELERATE_AFTER",
    "MAX_LINE",
    "PEM_HOLD_CAP",
    "RULES",
    "RULESET_VERSION",
    "Finding",
    "Rule",
    "StreamRedactor",
    "hyperscan_available",
    "redact_argv",
    "redact_bytes",
    "redact_text",
    "rule_names",
    "shannon_entropy",
]

RULESET_VERSION = "2026.11.2"
"""Version of the rule set; callers record it with everything they redact.

2026.11.2: the aws-secret-access-key rule is gated on every spelling its regex accepts
(``secret-access-key``, ``secret_accesskey``, …), not only two of them.
"""

MAX_MATCH = 24 * 1024
"""Upper bound on the length of any rule's match (every quantifier is bounded)."""
OVERLAP = 2 * MAX_MATCH + 1024
"""How much of a window over an overlong line is re-examined by the next window."""
MAX_LINE = 4 * OVERLAP
"""Lines longer than this are processed in overlapping windows rather than whole."""
BLOCK = 64 * 1024
"""Complete lines are gated and scanned together in blocks of about this many characters."""
PEM_LINE_MAX = 4096
"""A line inside a PEM block longer than this cannot be key material."""
PEM_HOLD_CAP = 64 * 1024
"""Most characters of a PEM block held back before it is redacted without waiting for its END."""
PEM_MIN_BODY = 32
"""Base64 characters a BEGIN…END block needs to count as a key (``anything`` does not)."""
PEM_MIN_TRUNCATED = 64
"""Base64 characters a block cut short (no END line) needs to be redacted as a truncated key."""
CONTEXT = 128
"""Characters kept before the current position for look-behinds and key-name checks."""

_TERMINATORS = ("\n", "\r")

Span = tuple[int, int]
Select = Callable[[re.Match[str]], list[Span]]


class Finding(NamedTuple):
    """One redacted secret: the rule that found it and its span in the original text."""

    rule: str
    start: int
    end: int


class Rule(NamedTuple):
    """A keyword-gated rule.

    ``anchored`` rules are tried (``pattern.match``) only where one of their ``starts`` occurs,
    which is how case-insensitive rules, and rules whose keyword alone is everywhere, stay fast;
    the others are scanned (``pattern.finditer``) over a block in which a keyword occurs.
    ``select`` maps a match to the spans to redact (empty: the match was a placeholder or a
    look-alike). The regex is compiled
    on first use: compiling all of them costs more than a harness hook's whole budget, and most
    outputs never reach most rules.
    """

    name: str
    keywords: tuple[str, ...]
    """Lowercase literals: every match contains one of them (compared case-insensitively)."""
    source: str
    flags: int
    select: Select
    anchored: bool = False
    starts: tuple[tuple[str, int], ...] = ()
    """Anchored rules: ``(literal, offset)``: every match starts ``offset`` characters into an
    occurrence of one of these lowercase literals (a keyword with the characters that must
    surround it), so the literals alone say where to try the rule."""
    locator: tuple[str, int] | None = None
    """Anchored rules, optionally: ``(regex, width)``, a case-sensitive, fixed-width pattern that
    the first ``width`` characters of every match fullmatch. Where Hyperscan scans a block, it
    finds these places instead of the ``starts`` (which are many more: ``ac`` + two hex digits
    is in every hex id); the rule is tried at exactly the same matches either way."""

    @property
    def pattern(self) -> re.Pattern[str]:
        """The compiled regex (compiled once, on first use)."""
        key = (self.source, self.flags)
        compiled = _COMPILED.get(key)
        if compiled is None:
            compiled = _COMPILED[key] = re.compile(self.source, self.flags)
        return compiled


_COMPILED: dict[tuple[str, int], re.Pattern[str]] = {}
"""Each rule's regex once compiled, by source and flags (a rule, a record, keeps no state)."""


# --- value checks ---------------------------------------------------------------------------


def shannon_entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    n = len(value)
    if n == 0:
        return 0.0
    total = 0.0
    for count in Counter(value).values():
        p = count / n
        total -= p * math.log2(p)
    return total


_PLACEHOLDER_PARTS = (
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
    "<",
    ">",
    "${",
    "{{",
    "$(",
    "%(",
    "%s",
)
_PLACEHOLDER_WORDS = frozenset(
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


def _lazy(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A regex compiled on first use: the value checks and PEM patterns serve only texts that
    hold a candidate, and compiling them all cost ~1.6 ms of every hook that redacts a line."""
    return cache(lambda: re.compile(pattern, flags))


_CODE_CHARS = frozenset("+(){}[]:;,=`")
_UUID = _lazy(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_WORDISH = _lazy(
    r"[A-Z]?[a-z]+(?:[A-Z][a-z]+)*"  # word, camelCase, PascalCase
    r"|[A-Z][A-Z0-9]*(?:[_.-][A-Z0-9]+)+"  # CONSTANT_CASE, KEBAB-CASE
    r"|_*[a-z][a-z0-9]*(?:[_.-][a-z0-9]+)+_*",  # snake_case, kebab-case, dotted.names
    re.ASCII,
)
_FILENAME = _lazy(
    r"[\w.-]+\.(?:pem|key|crt|cer|p12|pfx|jks|json|ya?ml|txt|env|keystore|conf|cfg|ini)",
    re.ASCII,
)
_PATH_SEGMENT = _lazy(r"[a-z0-9_.@+-]*|[A-Za-z0-9_@+-]*\.[A-Za-z0-9_.@+-]*", re.ASCII)


def _is_path(value: str) -> bool:
    """``/home/me/x``, ``~/.ssh``, ``../conf``, ``C:\\x``: segments of lowercase words or names."""
    if len(value) > 2 and value[1] == ":" and value[2] == "\\":
        return True
    if not value.startswith(("/", "~/", "./", "../")):
        return False
    segments = value.lstrip("~.").split("/")
    return all(_PATH_SEGMENT().fullmatch(seg) or _WORDISH().fullmatch(seg) for seg in segments)


def _classes(value: str) -> int:
    lower = upper = digit = other = 0
    for ch in value:
        if "a" <= ch <= "z":
            lower = 1
        elif "A" <= ch <= "Z":
            upper = 1
        elif "0" <= ch <= "9":
            digit = 1
        else:
            other = 1
    return lower + upper + digit + other


def looks_like_secret(value: str, min_len: int = 8) -> bool:
    """Whether a value after a secret-looking key is a credential, not a placeholder or a word.

    Rejects values that are too short, variable references and templates (``$X``, ``${x}``,
    ``{{ x }}``, ``<token>``), masked or example values (``xxxx``, ``****``, ``1234``,
    ``EXAMPLE``), plain words and identifiers (``hunter``, ``K8S_CRED``, ``ultraPictureBox``),
    paths, URLs and file names, numbers, and strings whose Shannon entropy is low for their length.
    UUIDs count as credentials (API keys are often UUIDs). Values with spaces that look like code
    between two string literals (``" + token + "``, ``: lambda n: b``) are not values at all.
    """
    if value[:1].isspace() or value[-1:].isspace():
        return False
    v = value.rstrip("\\")
    if len(v) < min_len:
        return False
    if " " in v and any(c in v for c in _CODE_CHARS):
        return False
    lowered = v.lower()
    if v[0] in "$%<[{`" or lowered in _PLACEHOLDER_WORDS:
        return False
    if any(part in lowered for part in _PLACEHOLDER_PARTS):
        return False
    if "://" in v or _is_path(v) or _FILENAME().fullmatch(v):
        return False
    if _UUID().fullmatch(v):
        return len(set(v.replace("-", ""))) > 4
    core = v.rstrip("=")
    if core.isdigit() or _WORDISH().fullmatch(core):
        return False
    if _classes(core) < 2 and not (len(core) >= 24 and shannon_entropy(core) >= 3.5):
        return False
    return shannon_entropy(v) >= min(3.0, 0.7 * math.log2(len(v)))


def _random_enough(value: str, threshold: float = 3.0) -> bool:
    """Token bodies of a known format: reject masks like ``xxxx…`` and repeated digits.

    The entropy bar scales with length (a random 16-character base32 body can score 2.9).
    """
    lowered = value.lower()
    if "xxxx" in lowered or "example" in lowered:
        return False
    return shannon_entropy(value) >= min(threshold, 0.6 * math.log2(max(2, len(value))))


# --- selectors --------------------------------------------------------------------------------


def _whole(check: Callable[[str], bool] | None = None) -> Select:
    def select(m: re.Match[str]) -> list[Span]:
        if check is not None and not check(m.group(0)):
            return []
        return [m.span()]

    return select


def _group(name: str, check: Callable[[str], bool] | None = None) -> Select:
    def select(m: re.Match[str]) -> list[Span]:
        value = m.group(name)
        if value is None or (check is not None and not check(value)):
            return []
        return [m.span(name)]

    return select


def _body_check(name: str, check: Callable[[str], bool]) -> Select:
    """Redact the whole match when the named part passes ``check``."""

    def select(m: re.Match[str]) -> list[Span]:
        value = m.group(name)
        if value is None or not check(value):
            return []
        return [m.span()]

    return select


def _first_group(names: tuple[str, ...], check: Callable[[str], bool]) -> Select:
    """Redact the whole match when the first named part that matched passes ``check``."""

    def select(m: re.Match[str]) -> list[Span]:
        for name in names:
            value = m.group(name)
            if value is not None:
                return [m.span()] if check(value) else []
        return []

    return select


# generic key = value ------------------------------------------------------------------------

_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEY_QUALIFIED = _lazy(
    r"(?:api|secret|access|private|client|auth|encryption|signing|master|account|storage|app|"
    r"license|session|service|shared|subscription|webhook|consumer|signature|hmac|bot|admin|"
    r"x-api|user|deploy|write|read|root)[_.-]?key",
    re.ASCII,
)
_KEY_REJECT = ("public", "pubkey", "csrf", "xsrf", "nonce")


def _key_name(text: str, start: int, end: int) -> tuple[int, str]:
    """The identifier that ends at ``end`` and contains ``start`` (at most 64 characters back)."""
    i = start
    limit = max(0, start - 64)
    while i > limit and text[i - 1] in _KEY_CHARS:
        i -= 1
    return i, text[i:end].lower()


_GENERIC_VALUES = ("dq", "sq", "bare")


def _select_generic(m: re.Match[str]) -> list[Span]:
    text = m.string
    start = m.start()
    # Most matches are `key=17` or `"password": "x"`: the value is too short to be a secret,
    # which looks_like_secret would decide last; deciding it first changes no result.
    dq, sq, bare = m.group(*_GENERIC_VALUES)
    value = dq if dq is not None else sq if sq is not None else bare
    if value is None or len(value.rstrip("\\")) < 8:
        return []
    sep = m.group("sep").strip()
    if not sep and (start == 0 or text[start - 1] != "-"):
        return []  # `--password VALUE` only, not prose like "token abc"
    if sep == "," and not (m.group("kq") and m.group("bare") is None):
        return []  # f("api_token", "…") only, not an argument list
    name_start, name = _key_name(text, start, m.end("kw"))
    if text.startswith("://", name_start - 3):
        return []  # https://oauth2:…@host is URL userinfo, the url-credentials rule's
    if any(bad in name for bad in _KEY_REJECT):
        return []
    if m.group("kw").lower() == "key" and not _KEY_QUALIFIED().search(name):
        return []
    if m.group("bare") is not None and text.startswith("(", m.end()):
        return []  # password = read_secret(…): a call, not a value
    for group in ("dq", "sq", "bare"):
        value = m.group(group)
        if value is not None:
            if not looks_like_secret(value):
                return []
            start, end = m.span(group)
            while end > start and text[end - 1] == "\\":
                end -= 1  # keep the escape of a closing \" in JSON-in-a-string
            return [(start, end)]
    return []


# curl -u / --user -------------------------------------------------------------------------------

_CURL_PLACEHOLDERS = frozenset(
    {"user", "username", "pass", "password", "passwd", "token", "secret", "test", "xxx", "yyy"}
)


def _credential_ok(value: str) -> bool:
    v = value.strip("\"'")
    if len(v) >= 2 and v[0] == "{" and v[-1] == "}" and not v.startswith("{{"):
        v = v[1:-1]
    if len(v) < 6 or v.lower() in _CURL_PLACEHOLDERS or any(c.isspace() for c in v):
        return False
    if v[0] in "$%<[{" or any(c in v for c in "<>") or "${" in v or "$(" in v:
        return False
    lowered = v.lower()
    if any(part in lowered for part in ("xxxx", "****", "example", "your")):
        return False
    if v.isdigit() or _WORDISH().fullmatch(v):
        return False
    return _classes(v) >= 2 and shannon_entropy(v) >= 2.5


def _strip_quotes(text: str, start: int, end: int) -> Span:
    while start < end and text[start] in "\"'":
        start += 1
    while end > start and text[end - 1] in "\"'":
        end -= 1
    return start, end


def _select_curl(m: re.Match[str]) -> list[Span]:
    text = m.string
    start, end = m.span("arg")
    if text.find("[REDACTED:", start, end) >= 0:
        return []  # already redacted
    colon = text.find(":", start, end)
    if colon < 0:
        return []  # `-u user` alone: curl prompts for the password
    user = _strip_quotes(text, start, colon)
    password = _strip_quotes(text, colon + 1, end)
    if password[1] > password[0]:
        return [password] if _credential_ok(text[password[0] : password[1]]) else []
    if user[1] > user[0] and _credential_ok(text[user[0] : user[1]]):
        return [user]  # `-u sk_live_…:` — an API key as the user name
    return []


# URL userinfo -----------------------------------------------------------------------------------

_URL_PLACEHOLDERS = frozenset(
    {"pass", "password", "passwd", "pwd", "secret", "token", "changeme", "user", "username"}
)


def _url_password_ok(value: str) -> bool:
    if len(value) < 4 or value.lower() in _URL_PLACEHOLDERS or value[0] in "$%<[{*":
        return False
    lowered = value.lower()
    return not any(part in lowered for part in ("xxx", "***", "${", "{{", "your"))


# PEM ----------------------------------------------------------------------------------------------

_B64_CHAR = re.compile(r"[A-Za-z0-9+/]")


def _inline_pem_ok(m: re.Match[str]) -> list[Span]:
    body = m.group("body").replace("\\n", "").replace("\\r", "")
    if len(_B64_CHAR.findall(body)) < PEM_MIN_BODY:
        return []
    return [m.span()]


# --- the rules -----------------------------------------------------------------------------------

_A = re.ASCII
_AI = re.ASCII | re.IGNORECASE


def _rule(
    name: str,
    keywords: Iterable[str],
    pattern: str,
    select: Select,
    *,
    flags: int = _A,
    anchored: bool = False,
    starts: Iterable[tuple[str, int]] | None = None,
    locator: tuple[str, int] | None = None,
) -> Rule:
    keywords = tuple(keywords)
    if anchored and starts is None:
        starts = [(kw, 0) for kw in keywords]
    return Rule(name, keywords, pattern, flags, select, anchored, tuple(starts or ()), locator)


def _generic_starts(names: Iterable[str]) -> list[tuple[str, int]]:
    """What the generic rule's match starts with: a key name and the characters after it.

    After the name the regex allows only an index (``[_.-]?[0-9]``), a quote or backslash, a
    separator (``:``, ``=``, ``,``, blanks then one of those), or, right after a ``-`` (as in
    ``--password VALUE``), a blank. Listing those pairs keeps prose such as "token refresh" or
    "PASSED" from ever reaching the regex.
    """
    blanks = " \t"
    starts: list[tuple[str, int]] = []
    for name in names:
        starts += [(name + c, 0) for c in "\\\"',:=0123456789"]
        starts += [(name + s + d, 0) for s in "_.-" for d in "0123456789"]
        starts += [(name + b + c, 0) for b in blanks for c in blanks + ":=,"]
        starts += [("-" + name + b, 1) for b in blanks]
    return starts


_HEX = "0123456789abcdef"
_GENERIC_NAMES = (
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "pass",
    "secret",
    "token",
    "auth",
    "credentials",
    "credential",
    "key",
)

RULES: tuple[Rule, ...] = (
    _rule(
        "private-key",  # a PEM block on one line: JSON service-account keys, escaped newlines
        ["private key"],
        r"-----BEGIN[ A-Z0-9]{0,32}PRIVATE KEY(?: BLOCK)?-----"
        r"(?P<body>(?:[^\r\n-]|-(?!----)){32,16384}+)"
        r"-----END[ A-Z0-9]{0,32}PRIVATE KEY(?: BLOCK)?-----",
        _inline_pem_ok,
    ),
    _rule(
        "jwt",
        ["eyj"],
        r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,2048}+\.eyJ[A-Za-z0-9_-]{8,16384}+"
        r"\.[A-Za-z0-9_-]{0,2048}+",
        _whole(),
    ),
    _rule(
        "aws-access-key-id",
        ["akia", "asia", "abia", "acca", "a3t"],
        r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)(?<![A-Za-z0-9_-]....)"
        r"(?P<body>[A-Z2-7]{16})(?![A-Za-z0-9])",
        _body_check("body", _random_enough),
    ),
    _rule(
        "aws-secret-access-key",
        [f"secret{a}access{b}key" for a in ("", "_", "-") for b in ("", "_", "-")],
        r"secret[_-]?access[_-]?key[\"']?[ \t]{0,4}(?::|=>|=)[ \t]{0,4}[\"']?"
        r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        _group("s", lambda v: _random_enough(v, 3.5)),
        flags=_AI,
        anchored=True,
    ),
    _rule(
        "aws-bedrock-key",
        ["absk"],
        r"ABSKQmVkcm9ja0FQSUtleS1(?<![A-Za-z0-9+/]ABSKQmVkcm9ja0FQSUtleS1)"
        r"[A-Za-z0-9+/]{100,269}+={0,2}(?![A-Za-z0-9+/=])",
        _whole(),
    ),
    _rule(
        "gcp-api-key",
        ["aiza"],
        r"AIza(?<![A-Za-z0-9_-]AIza)(?P<body>[0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])",
        _body_check("body", _random_enough),
    ),
    _rule(
        "google-oauth",
        ["gocspx-", "ya29.", "1//0"],
        r"GOCSPX-(?<![A-Za-z0-9_-]GOCSPX-)(?P<a>[A-Za-z0-9_-]{28})(?![A-Za-z0-9_-])"
        r"|ya29\.(?<![A-Za-z0-9_-]ya29\.)(?P<b>[0-9A-Za-z_-]{20,2048}+)"
        r"|1//0(?<![A-Za-z0-9_/-]1//0)(?P<c>[0-9A-Za-z_-]{30,512}+)",
        _first_group(("a", "b", "c"), _random_enough),
    ),
    _rule(
        "azure-storage-key",
        ["accountkey", "sharedaccesskey"],
        r"(?:AccountKey|SharedAccessKey)=(?P<s>[A-Za-z0-9+/]{40,100}={0,2})(?![A-Za-z0-9+/=])",
        _group("s", _random_enough),
    ),
    _rule(
        "azure-sas-signature",
        ["sig="],
        r"sig=(?<=[?&;]sig=)(?P<s>[A-Za-z0-9%+/]{30,200}+(?:=|%3[dD]){0,2})",
        _group("s", _random_enough),
    ),
    _rule(
        "azure-client-secret",
        ["q~"],
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
        _whole(_random_enough),
    ),
    _rule(
        "github-token",
        ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        r"g(?:h[pousr]_(?<![A-Za-z0-9_]gh[pousr]_)(?P<a>[A-Za-z0-9]{36,251}+)(?![A-Za-z0-9_])"
        r"|ithub_pat_(?<![A-Za-z0-9_]github_pat_)(?P<b>[A-Za-z0-9_]{82,244}+))",
        _first_group(("a", "b"), _random_enough),
    ),
    _rule(
        "gitlab-token",
        [f"gl{kind}-" for kind in ("pat", "ptt", "rt", "dt", "ft", "imt", "cbt", "soat", "oas")]
        + ["glagent-"],
        r"gl(?:pat|ptt|rt|dt|ft|imt|cbt|soat|oas|agent)-"
        r"(?P<a>[A-Za-z0-9_-]{20,300}+(?:\.[A-Za-z0-9]{2,16}){0,2}+)",
        _body_check("a", _random_enough),
    ),
    _rule(
        "gitlab-runner-token",
        ["gr1348941"],
        r"GR1348941(?P<a>[A-Za-z0-9_-]{20,40}+)",
        _body_check("a", _random_enough),
    ),
    _rule(
        "slack-token",
        ["xox", "xapp-"],
        r"xox(?<![A-Za-z0-9]xox)(?:"
        r"[abposre]-(?:[0-9]{1,3}-)?[0-9]{6,15}-(?:[0-9]{6,15}-){0,3}+[A-Za-z0-9]{8,128}+"
        r"|e-[0-9]-[A-Za-z0-9]{100,256}+"
        r"|e\.xox[bp]-[0-9]-[A-Za-z0-9]{100,256}+"
        r")(?![A-Za-z0-9#*-])"
        r"|xapp-(?<![A-Za-z0-9]xapp-)[0-9]-[A-Z0-9]{8,15}-[0-9]{10,16}-[a-z0-9]{32,80}+",
        _whole(),
    ),
    _rule(
        "slack-webhook",
        ["hooks.slack.com"],
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9+/_-]{20,200}+)",
        _group("s"),
    ),
    _rule(
        "stripe-key",
        ["k_live", "k_test", "whsec_"],  # sk_live_ rk_live_ sk_test_ rk_test_ whsec_
        r"[sr]k_(?:live|test)_(?<![A-Za-z0-9_][sr]k_(?:live|test)_)(?P<a>[A-Za-z0-9]{16,247}+)"
        r"|whsec_(?<![A-Za-z0-9_]whsec_)(?P<b>[A-Za-z0-9+/=]{24,128}+)",
        _first_group(("a", "b"), _random_enough),
    ),
    _rule(
        "anthropic-key",
        ["sk-ant-"],
        r"sk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{93}AA(?![A-Za-z0-9_-])",
        _whole(),
    ),
    _rule(
        "openai-key",
        ["sk-"],
        r"sk-(?<![A-Za-z0-9_-]sk-)(?:"
        r"(?:proj|svcacct|admin)-(?P<a>[A-Za-z0-9_-]{40,300}+)"
        r"|(?P<b>[A-Za-z0-9]{48})(?![A-Za-z0-9_-]))",
        _first_group(("a", "b"), _random_enough),
    ),
    _rule(
        "npm-token",
        ["npm_"],
        r"npm_(?<![A-Za-z0-9_]npm_)(?P<body>[A-Za-z0-9]{36})(?![A-Za-z0-9])",
        _body_check("body", _random_enough),
    ),
    _rule(
        "pypi-token",
        ["pypi-ageichlwas5vcmc"],
        r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,2048}+",
        _whole(),
    ),
    _rule(
        "sendgrid-key",
        ["sg."],
        r"SG\.(?<![A-Za-z0-9_]SG\.)[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])",
        _whole(),
    ),
    _rule(
        "twilio-api-key",
        ["sk"],
        r"SK(?<![A-Za-z0-9_]SK)(?P<body>[0-9a-fA-F]{32})(?![0-9A-Za-z_])",
        _body_check("body", _random_enough),
        anchored=True,  # "sk" (skipped, task) is in every block: try only "SK" + hex
        starts=[(f"sk{a}{b}", 0) for a in _HEX for b in _HEX],
        locator=("SK[0-9a-fA-F]{32}", 34),
    ),
    _rule(
        "twilio-account-sid",
        ["ac"],
        r"AC(?<![A-Za-z0-9_]AC)(?P<body>[0-9a-f]{32})(?![0-9A-Za-z_])",
        _body_check("body", _random_enough),
        anchored=True,  # as twilio-api-key: "ac" is everywhere, "AC" + hex is not
        starts=[(f"ac{a}{b}", 0) for a in _HEX for b in _HEX],
        locator=("AC[0-9a-f]{32}", 34),
    ),
    _rule(
        "huggingface-token",
        ["hf_", "api_org_"],
        r"hf_(?<![A-Za-z0-9_]hf_)(?P<a>[A-Za-z0-9]{30,40})(?![A-Za-z0-9])"
        r"|api_org_(?<![A-Za-z0-9_]api_org_)(?P<b>[A-Za-z0-9]{30,40})(?![A-Za-z0-9])",
        _first_group(("a", "b"), _random_enough),
    ),
    _rule(
        "authorization-header",
        ["authorization"],
        r"authorization[\"']?[ \t]{0,8}[:=][ \t]{0,8}[\"']?"
        r"(?:(?:bearer|basic|token|api-token|apikey|api-key|key|jwt|dpop|sso-key|otp|"
        r"gitlab-token|negotiate|ntlm|digest)[ \t]{1,8})?"
        r"(?P<s>[^\s\"'`,;]{1,4096}+)",
        _group("s", looks_like_secret),
        flags=_AI,
        anchored=True,
    ),
    _rule(
        "bearer-token",
        ["bearer"],
        r"bearer[ \t]{1,8}(?P<s>[A-Za-z0-9._~+/=-]{16,4096}+)",
        _group("s", looks_like_secret),
        flags=_AI,
        anchored=True,
    ),
    _rule(
        "curl-credentials",
        ["-u", "--user"],
        r"(?<!\S)(?:--user|-u|-U)(?:[ \t]{1,8}|=|(?=[\"']))"
        r"(?P<arg>(?:\"[^\"\r\n]{0,256}+\"|'[^'\r\n]{0,256}+'|[^\s\"']{1,256}+){1,4}+)",
        _select_curl,
        anchored=True,
    ),
    _rule(
        "url-credentials",
        ["://"],
        r"://(?P<user>[^\s/:@'\"<>]{0,128}+):(?P<s>[^\s/'\"<>]{1,256})@",
        _group("s", _url_password_ok),
    ),
    _rule(
        "generic-secret",
        ["pass", "pwd", "secret", "token", "auth", "credential", "key"],
        r"(?:(?<=-)(?P<flag>))?"  # --password VALUE: a bare space separates only after a dash
        r"(?P<kw>" + "|".join(_GENERIC_NAMES) + ")"
        r"(?:[_.-]?[0-9]{1,3})?"
        r"(?P<kq>\\?[\"']?)"
        r"(?P<sep>[ \t]{0,4}(?::=|=>|[:=,])[ \t]{0,8}|(?(flag)[ \t]{1,4}|(?!)))"
        r"(?:\\?\"(?P<dq>[^\"\r\n]{1,512})\"|\\?'(?P<sq>[^'\r\n]{1,512})'"
        r"|(?P<bare>[^\s\"'`,;&<>(){}\[\]]{1,512}+))",
        _select_generic,
        flags=_AI,
        anchored=True,
        starts=_generic_starts(_GENERIC_NAMES),
    ),
)
"""Every rule, in priority order (an overlap is reported under the earlier-starting match)."""


def rule_names() -> list[str]:
    """Names of all rules, including the multi-line PEM handling (``private-key``)."""
    return [rule.name for rule in RULES]


_PEM_BEGIN = _lazy(r"-----BEGIN[ A-Z0-9]{0,32}PRIVATE KEY(?: BLOCK)?-----", _A)
_PEM_END = _lazy(r"-----END[ A-Z0-9]{0,32}PRIVATE KEY(?: BLOCK)?-----", _A)
_PEM_BODY = _lazy(
    r"[ \t#/>*'\"+]{0,16}"
    r"(?:(?P<b64>[A-Za-z0-9+/=]{1,1024})|[A-Za-z][A-Za-z-]{1,40}:[^\r\n]{0,256})?"
    r"(?:\\n|\\r|[ \t'\",;+\\]){0,16}"
    r"[\r\n]{0,2}",
    _A,
)
_PEM_RULE = "private-key"

# The gate: one pass of a multi-literal automaton (Aho-Corasick, in Rust) over the lowercased
# block finds every literal any rule needs: scanned rules' keywords (the rule runs over the block
# when one of them occurs) and anchored rules' starts (the rule is tried exactly there). Literals
# are ASCII and lowercase; lowering is ASCII-only and keeps offsets, as ``re.ASCII|IGNORECASE``
# (tests/core/test_redact_short_text.py checks every rule for what the gate assumes).
_LITERALS: dict[str, tuple[list[int], list[tuple[int, int]]]] = {}
for _index, _r in enumerate(RULES):
    if _r.anchored:
        for _lit, _offset in _r.starts:
            _LITERALS.setdefault(_lit, ([], []))[1].append((_index, _offset))
    else:
        for _kw in _r.keywords:
            _LITERALS.setdefault(_kw, ([], []))[0].append(_index)
_LITERAL_LIST = sorted(_LITERALS)
_GATES: tuple[tuple[int, ...], ...] = tuple(tuple(_LITERALS[lit][0]) for lit in _LITERAL_LIST)
_STARTS: tuple[tuple[tuple[int, int], ...], ...] = tuple(
    tuple(_LITERALS[lit][1]) for lit in _LITERAL_LIST
)


@cache
def _automaton() -> ahocorasick_rs.BytesAhoCorasick:
    """The literal gate for short inputs, built on first use (hooks redact a few lines only)."""
    import ahocorasick_rs

    return ahocorasick_rs.BytesAhoCorasick(
        [lit.encode("ascii") for lit in _LITERAL_LIST],
        implementation=ahocorasick_rs.Implementation.DFA,
    )


SHORT_TEXT = 512
"""Bytes up to which, before the automaton exists, literals are looked for one by one: building
it costs ~2 ms, more than a hook's one line of text needs (~0.2 ms for a hundred bytes)."""


def _literal_hits(low: bytes) -> Iterator[tuple[int, int]]:
    """Every occurrence of every literal in ``low``: (literal index, offset), overlapping ones
    included, in no particular order (the callers collect them into sets and maxima)."""
    if len(low) > SHORT_TEXT or _automaton.cache_info().currsize:
        for literal, at, _ in _automaton().find_matches_as_indexes(low, overlapping=True):
            yield literal, at
        return
    for literal, text in enumerate(_LITERAL_BYTES):
        at = low.find(text)
        while at != -1:
            yield literal, at
            at = low.find(text, at + 1)


_LITERAL_BYTES = tuple(lit.encode("ascii") for lit in _LITERAL_LIST)


# The same gate for large streams: one Hyperscan database holding every anchored rule's start
# literals (caseless, as the automaton sees lowercased text) or its locator, every scanned
# rule's own regex as a prefilter, and the PEM BEGIN marker. Hyperscan scans the raw block at
# several GB/s without the GIL and needs no lowercased copy. It reports the end of each match:
# literals and locators have a fixed width, so a start is known; a scanned rule's prefilter is
# reported once per block (SINGLEMATCH), at the first place the rule's regex could end. Each
# pattern id maps to (rules gated, (rule, offset) tries, width); the last one is the marker.
# Output is identical either way: a rule is skipped only where it has no match, and it runs
# from the same places as behind the automaton.
ACCELERATE_AFTER = 1024 * 1024
"""Bytes a stream must reach before the Hyperscan gate is used (compiled once per process,
~60 ms, unless the cache has it: see :func:`use_hyperscan_cache`)."""

_Table = tuple[tuple[tuple[int, ...], tuple[tuple[int, int], ...], int], ...]


@cache
def _hyperscan_gate() -> tuple[Any, _Table] | None:
    """The compiled Hyperscan database and its pattern table; None where it is not installed."""
    try:
        import hyperscan
    except ImportError:
        return None
    located = {index for index, rule in enumerate(RULES) if rule.locator is not None}
    expressions: list[bytes] = []
    flags: list[int] = []
    table: list[tuple[tuple[int, ...], tuple[tuple[int, int], ...], int]] = []
    for literal, starts in zip(_LITERAL_LIST, _STARTS, strict=True):
        starts = tuple((index, offset) for index, offset in starts if index not in located)
        if starts:
            expressions.append(re.escape(literal).encode("ascii"))
            flags.append(hyperscan.HS_FLAG_CASELESS)
            table.append(((), starts, len(literal)))
    # A scanned rule is gated on its own regex, compiled in prefilter mode (lookarounds and
    # possessive quantifiers relaxed: Hyperscan reports a superset of the regex's matches), so
    # a keyword alone (the "acca" in a hex id) no longer sends a block through the rule. A
    # bounded repeat of more than 69 becomes unbounded there: a superset too, and ~1000x faster
    # to compile (the private-key rule's ``{32,16384}`` alone takes Hyperscan 1.7 s).
    long_repeat = re.compile(r"(?<!\\)\{(\d+),(?:\d{3,}|[7-9]\d)\}")
    for index, rule in enumerate(RULES):
        if not rule.anchored:
            expressions.append(long_repeat.sub(r"{\1,}", rule.source).encode("ascii"))
            flag = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH
            if rule.flags & re.IGNORECASE:
                flag |= hyperscan.HS_FLAG_CASELESS
            flags.append(flag)
            table.append(((index,), (), 0))
    for index in sorted(located):
        source, width = RULES[index].locator  # type: ignore[misc]
        expressions.append(source.encode("ascii"))
        flags.append(0)
        table.append(((), ((index, 0),), width))
    # Last: where a PEM BEGIN marker may start (the machine looks for one only then).
    expressions.append(b"-----BEGIN")
    flags.append(hyperscan.HS_FLAG_SINGLEMATCH)
    table.append(((), (), 0))
    return hyperscan_database("redact", expressions, flags), tuple(table)


_hyperscan_cache: list[Path] = []


def use_hyperscan_cache(directory: Path) -> None:
    """Keep compiled Hyperscan databases in ``directory`` (created 0700 when first written).

    Loading a serialized database takes well under a millisecond and ~1 MiB; compiling one takes
    ~60 ms and ~12 MiB at its peak, once per process. The files hold only the rule set compiled
    (no output), are keyed by a hash of the patterns, flags and Hyperscan version, and are
    recompiled whenever they do not load.
    """
    _hyperscan_cache[:] = [directory]


def hyperscan_database(name: str, expressions: list[bytes], flags: list[int]) -> Any:
    """A block-mode Hyperscan database of ``expressions`` (ids are their indexes), loaded from
    the cache when it holds this exact one, else compiled (and cached)."""
    import hashlib
    import platform
    import sys

    import hyperscan

    identity = repr(
        (
            getattr(hyperscan, "__version__", ""),
            sys.platform,
            platform.machine(),
            expressions,
            flags,
        )
    ).encode()
    digest = hashlib.sha256(identity).hexdigest()[:32]
    path = _hyperscan_cache[0] / f"hyperscan-{name}-{digest}.db" if _hyperscan_cache else None
    if path is not None:
        try:
            return hyperscan.loadb(path.read_bytes(), hyperscan.HS_MODE_BLOCK)
        except (OSError, hyperscan.error):
            pass  # absent, unreadable or built for another CPU: compile it
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=expressions,
        ids=list(range(len(expressions))),
        elements=len(expressions),
        flags=flags,
    )
    if path is not None:
        _write_private(path, hyperscan.dumpb(database))
    return database


def _write_private(path: Path, data: bytes) -> None:
    """Write ``path`` whole (0600, via a temporary file and a rename); give up quietly."""
    import contextlib
    import os
    import threading

    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()


def hyperscan_available() -> bool:
    """Whether the Hyperscan gate can be used here (the package is installed and compiles)."""
    return _hyperscan_gate() is not None


def _collect(pattern: int, _start: int, end: int, _flags: int, hits: list[tuple[int, int]]) -> None:
    hits.append((pattern, end))


def _find_terminator(text: str, start: int, end: int) -> int:
    """First ``\\n`` or ``\\r`` in ``text[start:end]``, or -1."""
    nl = text.find("\n", start, end)
    cr = text.find("\r", start, end if nl < 0 else nl)
    return nl if cr < 0 else cr


def _rfind_terminator(text: str, start: int, end: int) -> int:
    """Last ``\\n`` or ``\\r`` in ``text[start:end]``, or -1."""
    return max(text.rfind("\n", start, end), text.rfind("\r", start, end))


# --- the machine ---------------------------------------------------------------------------------


class _Pem:
    """A PEM block being read: where it began and how far it has been classified."""

    __slots__ = ("begin", "body", "last", "scan", "swallowing")

    def __init__(self, begin: int, scan: int) -> None:
        self.begin = begin  # where the BEGIN marker starts
        self.scan = scan  # start of the next line to classify
        self.body = 0  # base64 characters held so far
        self.last = 0  # end of the last key line's content (before its line terminator)
        self.swallowing = False  # past PEM_HOLD_CAP: already redacted, dropping key lines


class _Machine:
    """The redaction state machine shared by :func:`redact_text` and :class:`StreamRedactor`."""

    __slots__ = (
        "base",
        "buf",
        "cache",
        "counts",
        "dropped_newlines",
        "findings",
        "keep_findings",
        "no_pem",
        "no_terminator_before",
        "out",
        "pem",
        "pending",
        "pending_len",
        "pending_raw",
        "pos",
        "raw",
        "scratch",
        "skip",
    )

    def __init__(self, keep_findings: bool, buf: str = "") -> None:
        self.keep_findings = keep_findings
        self.buf = buf
        self.base: int = 0  # absolute offset of buf[0]
        self.pos: int = 0  # first character of buf not yet emitted
        self.skip: int = 0  # PEM BEGIN markers starting before this are not entered again
        self.pem: _Pem | None = None
        self.out: list[str] = []
        self.findings: list[Finding] = []
        self.counts: Counter[str] = Counter()
        self.pending: list[str] = []
        self.pending_len: int = 0
        self.no_terminator_before: int = 0  # buf[pos:this] is known to hold no line terminator
        # The spans of the region a PEM block was entered from, kept so that releasing a block
        # that was not a key resumes with the same spans instead of scanning the region again
        # (which would make a run of BEGIN lines quadratic): (region end, spans).
        self.cache: tuple[int, list[tuple[int, int, str]]] | None = None
        # Hyperscan's scratch space while the Hyperscan gate is on (one per machine: a machine
        # is used by one thread at a time, a scratch must be too).
        self.scratch: Any = None
        # With the Hyperscan gate: buf as bytes (scanned without a copy) and pending as bytes,
        # and the absolute range of the last block scanned when it held no PEM BEGIN marker.
        self.raw: bytes = b""
        self.pending_raw: list[bytes] = []
        self.no_pem: tuple[int, int] = (0, 0)
        # Line feeds of the input that the output does not have (inside redacted spans): the
        # output's line count plus this is the input's, so a caller need not count both.
        self.dropped_newlines: int = 0

    def accelerate(self, raw: bytes | None = None) -> bool:
        """Use the Hyperscan gate from now on (``raw``: buf as bytes, when the caller has it);
        False where it is not installed."""
        gate = _hyperscan_gate()
        if gate is None:
            return False
        if self.scratch is None:
            import hyperscan

            self.scratch = hyperscan.Scratch(gate[0])
            self.raw = self.buf.encode("latin-1") if raw is None else raw
            self.pending_raw = [chunk.encode("latin-1") for chunk in self.pending]
        return True

    # input ------------------------------------------------------------------

    def push(self, chunk: str, raw: bytes = b"") -> None:
        """Add input; ``raw`` is the same input as bytes (required with the Hyperscan gate)."""
        if not chunk:
            return
        self.pending.append(chunk)
        self.pending_len += len(chunk)
        if self.scratch is not None:
            assert len(raw) == len(chunk)
            self.pending_raw.append(raw)
        if "\n" in chunk or "\r" in chunk:
            ready = True  # a line (or a PEM block's line) may be complete
        elif self.pem is not None:
            ready = self.pending_len + len(self.buf) - self.pem.scan >= PEM_LINE_MAX
        else:
            ready = self.pending_len + len(self.buf) - self.pos >= MAX_LINE
        if ready:
            self._join()
            self.advance(final=False)

    def finish(self) -> None:
        self._join()
        self.advance(final=True)

    def take(self) -> str:
        text = "".join(self.out)
        self.out.clear()
        return text

    def keep_from(self) -> int:
        """The first character of buf that must be kept: the context before what is held."""
        held = self.pos
        if self.pem is not None and not self.pem.swallowing:
            held = min(held, self.pem.begin)
        return max(0, held - CONTEXT)

    def _join(self) -> None:
        drop = self.keep_from()
        if drop or self.pending:
            self.buf = self.buf[drop:] + "".join(self.pending)
            self.pending.clear()
            self.pending_len = 0
            if self.scratch is not None:
                self.raw = self.raw[drop:] + b"".join(self.pending_raw)
                self.pending_raw.clear()
            self.base += drop
            self.pos -= drop
            self.skip = max(0, self.skip - drop)
            self.no_terminator_before = max(self.pos, self.no_terminator_before - drop)
            if self.pem is not None:
                self.pem.begin = max(0, self.pem.begin - drop)  # only used while holding
                self.pem.scan -= drop
                self.pem.last = max(0, self.pem.last - drop)
            if self.cache is not None and drop:
                end, spans = self.cache
                self.cache = (end - drop, [(s - drop, e - drop, r) for s, e, r in spans])

    # output -----------------------------------------------------------------

    def _emit(self, end: int, spans: list[tuple[int, int, str]]) -> None:
        """Write buf[pos:end] with the spans (sorted, starting before end) redacted."""
        buf = self.buf
        cursor = self.pos
        out = self.out
        for start, stop, name in spans:
            if start >= end:
                break
            if start < cursor:
                continue
            if start > cursor:
                out.append(buf[cursor:start])
            out.append(f"[REDACTED:{name}]")
            self._record(name, start, stop)
            cursor = stop
        if end > cursor:
            out.append(buf[cursor:end])
            cursor = end
        self.pos = cursor

    def _record(self, name: str, start: int, stop: int) -> None:
        """A redaction of buf[start:stop], which the output does not have."""
        self.counts[name] += 1
        self.dropped_newlines += self.buf.count("\n", start, stop)
        if self.keep_findings:
            self.findings.append(Finding(name, self.base + start, self.base + stop))

    def _extend_last(self, stop: int) -> None:
        """The last redaction also covers buf[pos:stop] (key lines dropped past the hold cap)."""
        self.dropped_newlines += self.buf.count("\n", self.pos, stop)
        if self.keep_findings and self.findings:
            last = self.findings[-1]
            self.findings[-1] = Finding(last.rule, last.start, self.base + stop)

    # scanning ---------------------------------------------------------------

    def _scan(self, start: int, end: int) -> list[tuple[int, int, str]]:
        """All redaction spans of matches starting in buf[start:end] (endpos ``end``), merged."""
        buf = self.buf
        # Scanned rules to run, each from where its first match can start.
        active: dict[int, int] = {}
        tries: set[tuple[int, int]] = set()  # (rule index, offset into the block)
        if self.scratch is not None:
            gate = _hyperscan_gate()
            assert gate is not None
            database, table = gate
            hits: list[tuple[int, int]] = []
            database.scan(
                memoryview(self.raw)[start:end],
                match_event_handler=_collect,
                context=hits,
                scratch=self.scratch,
            )
            pem_pattern = len(table) - 1
            if not any(pattern == pem_pattern for pattern, _ in hits):
                self.no_pem = (self.base + start, self.base + end)
            for pattern, hit_end in hits:
                gates, starts, width = table[pattern]
                for index in gates:
                    # The first place the rule's regex can end (a superset's first match):
                    # every match ends there or later, so it lies in that line or after it
                    # (no rule matches across a line end).
                    last = start + hit_end - 1
                    active[index] = max(start, _rfind_terminator(buf, start, last) + 1)
                at = hit_end - width
                for index, offset in starts:
                    tries.add((index, at + offset))
        else:
            # Lowercased bytes, one per character (a character above U+00FF, only possible in
            # redact_text, becomes "?", which no literal contains).
            low = buf[start:end].encode("latin-1", "replace").lower()
            for literal, at in _literal_hits(low):
                for index in _GATES[literal]:
                    active[index] = start
                for index, offset in _STARTS[literal]:
                    tries.add((index, at + offset))
        raw: list[tuple[int, int, int]] = []  # (start, end, rule index)
        for index in sorted(active):
            select = RULES[index].select
            for m in RULES[index].pattern.finditer(buf, active[index], end):
                for s, e in select(m):
                    raw.append((s, e, index))
        for index, at in tries:
            hit = RULES[index].pattern.match(buf, start + at, end)
            if hit is not None:
                for s, e in RULES[index].select(hit):
                    raw.append((s, e, index))
        if not raw:
            return []
        # Overlapping matches become one span, named after the most specific rule among them
        # (RULES is in priority order: token formats first, context rules, the generic last).
        raw.sort()
        merged: list[tuple[int, int, int]] = []
        for s, e, index in raw:
            if merged and s < merged[-1][1]:
                ps, pe, pindex = merged[-1]
                merged[-1] = (ps, max(pe, e), min(pindex, index))
            else:
                merged.append((s, e, index))
        return [(s, e, RULES[index].name) for s, e, index in merged]

    def _pem_marker(self, start: int, end: int, spans: list[tuple[int, int, str]]) -> int:
        """First BEGIN … PRIVATE KEY marker in buf[start:end] that no span covers, or -1."""
        buf = self.buf
        lo = max(start, self.skip)
        if lo >= end:
            return -1
        free_from, free_to = self.no_pem  # a block in which Hyperscan saw no marker
        if free_from <= self.base + lo and self.base + end <= free_to:
            return -1
        if buf.find("-----BEGIN", lo, end) < 0:
            return -1
        for m in _PEM_BEGIN().finditer(buf, lo, end):
            b = m.start()
            if not any(s <= b < e for s, e, _ in spans):
                return b
        return -1

    # the main loop ----------------------------------------------------------

    def advance(self, final: bool) -> None:
        while True:
            if self.pem is not None:
                if not self._pem_step(final):
                    return
                continue
            buf = self.buf
            p = self.pos
            n = len(buf)
            if self.cache is not None:
                end, spans = self.cache
                if p < end:
                    self._region(p, end, spans)
                    continue
                self.cache = None
            if p >= n:
                return
            lim = min(n, p + MAX_LINE)
            t = _find_terminator(buf, max(p, self.no_terminator_before), lim)
            if t < 0:
                self.no_terminator_before = max(self.no_terminator_before, lim)
                if n - p >= MAX_LINE:
                    self._window()
                    continue
                if not final:
                    return
                self._region(p, n)
                continue
            # A region of complete lines, all shorter than MAX_LINE.
            if t + 1 - p >= BLOCK:
                self._region(p, t + 1)
            else:
                self._region(p, _rfind_terminator(buf, t, min(n, p + BLOCK)) + 1)

    def _region(self, p: int, e: int, spans: list[tuple[int, int, str]] | None = None) -> None:
        if spans is None:
            spans = self._scan(p, e)
        b = self._pem_marker(p, e, spans)
        if b >= 0:
            self._emit(b, spans)
            self.pem = _Pem(begin=b, scan=b)
            self.cache = (e, spans)
            return
        self._emit(e, spans)
        self.cache = None
        self.no_terminator_before = self.pos

    def _window(self) -> None:
        """One step over a line longer than MAX_LINE: commit all but the last OVERLAP."""
        p = self.pos
        we = p + MAX_LINE
        c = we - OVERLAP
        spans = self._scan(p, we)
        # No PEM block starts here: a BEGIN marker before c is followed by more than
        # PEM_LINE_MAX characters without a line end, so it could not be a key's first line.
        changed = True
        while changed:
            changed = False
            for s, e, _ in spans:
                if s < c < e:
                    c = e
                    changed = True
        self._emit(c, spans)
        self.no_terminator_before = self.pos

    # PEM blocks -------------------------------------------------------------

    def _pem_step(self, final: bool) -> bool:
        """Classify the next line of a held PEM block; False when more data is needed."""
        pem = self.pem
        assert pem is not None
        buf = self.buf
        n = len(buf)
        q = pem.scan
        if q == pem.begin:  # the BEGIN line: classify what follows the marker
            m = _PEM_BEGIN().match(buf, q)
            assert m is not None
            q = pem.scan = m.end()
        t = _find_terminator(buf, q, min(n, q + PEM_LINE_MAX))
        if t < 0:
            if n - q < PEM_LINE_MAX and not final:
                return False
            if n - q >= PEM_LINE_MAX or q >= n:
                self._pem_abort(q)
                return True
            line_end = n  # the last line of the input, without a terminator
        else:
            line_end = t + 1
            # take "\r\n" as one terminator so blank-line checks see whole lines
            if buf[t] == "\r" and line_end < n and buf[line_end] == "\n":
                line_end += 1
            elif buf[t] == "\r" and line_end == n and not final:
                return False
        end = _PEM_END().search(buf, q, line_end)
        if end is not None:
            before = _PEM_BODY().fullmatch(buf, q, end.start())
            if before is not None:
                body = pem.body + len(before.group("b64") or "")
                self._pem_close(end.end(), body)
                return True
        m = _PEM_BODY().fullmatch(buf, q, line_end)
        if m is None:
            self._pem_abort(q)
            return True
        b64 = m.group("b64")
        content_end = line_end
        while content_end > q and buf[content_end - 1] in "\r\n":
            content_end -= 1
        if b64:
            pem.body += len(b64)
        pem.scan = line_end
        if pem.swallowing:
            if b64:
                self._extend_last(content_end)
                self.pos = content_end
        else:
            if b64:
                pem.last = content_end
            if line_end - pem.begin > PEM_HOLD_CAP:
                if pem.body < PEM_MIN_TRUNCATED or pem.last <= pem.begin:
                    self._pem_abort(line_end)  # no key material worth the name: release
                    return True
                self.out.append(f"[REDACTED:{_PEM_RULE}]")
                self._record(_PEM_RULE, pem.begin, pem.last)
                self.pos = pem.last
                pem.swallowing = True
        if line_end >= n and final:
            self._pem_abort(line_end)
        return True

    def _pem_close(self, end: int, body: int) -> None:
        """An END marker closes the block at ``end``."""
        pem = self.pem
        assert pem is not None
        self.pem = None
        if pem.swallowing:
            self._extend_last(end)
            self.pos = end
            self.cache = None
        elif body >= PEM_MIN_BODY:
            self.out.append(f"[REDACTED:{_PEM_RULE}]")
            self._record(_PEM_RULE, pem.begin, end)
            self.pos = end
            self.cache = None
        else:
            self.skip = pem.begin + 1  # not a key: release the lines to the ordinary rules
        self.no_terminator_before = self.pos

    def _pem_abort(self, at: int) -> None:
        """A line that cannot be key material (or the end of input) at ``at`` ends the block."""
        pem = self.pem
        assert pem is not None
        self.pem = None
        if pem.swallowing:
            self.cache = None  # pos already sits after the last dropped key line
        elif pem.body >= PEM_MIN_TRUNCATED and pem.last > pem.begin:
            self.out.append(f"[REDACTED:{_PEM_RULE}]")
            self._record(_PEM_RULE, pem.begin, pem.last)
            self.pos = pem.last
            self.cache = None
        else:
            self.skip = pem.begin + 1
        self.no_terminator_before = self.pos
        del at


# --- public API ----------------------------------------------------------------------------------


def redact_text(text: str) -> tuple[str, list[Finding]]:
    """Redact ``text``; findings give each secret's rule and span in the original ``text``."""
    machine = _Machine(keep_findings=True, buf=text)
    machine.advance(final=True)
    return machine.take(), machine.findings


def redact_argv(argv: Sequence[str]) -> list[str]:
    """Redact a command line argument by argument, each seen in the context of its neighbours.

    ``["curl", "-u", "bob:pw"]`` or ``["mysql", "--password", "pw"]`` only reveal a secret
    together with the argument before it, so the arguments are redacted as one space-joined line
    and every argument keeps its own place in the list.
    """
    joined = " ".join(argv)
    _, findings = redact_text(joined)
    if not findings:
        return list(argv)
    result: list[str] = []
    offset = 0
    for arg in argv:
        start, end = offset, offset + len(arg)
        pieces: list[str] = []
        cursor = start
        for finding in findings:
            s, e = max(finding.start, start), min(finding.end, end)
            if s < e:
                pieces.append(joined[cursor:s])
                pieces.append(f"[REDACTED:{finding.rule}]")
                cursor = e
        pieces.append(joined[cursor:end])
        result.append("".join(pieces))
        offset = end + 1
    return result


def redact_bytes(data: bytes, *, accelerate: bool | None = None) -> bytes:
    """Redact ``data`` of any encoding; bytes outside every redacted span are kept exactly.

    ``accelerate``: use the Hyperscan gate (True: where installed; None: for data of at least
    :data:`ACCELERATE_AFTER` bytes; False: never). The output is the same either way.
    """
    machine = _Machine(keep_findings=False, buf=data.decode("latin-1"))
    if accelerate or (accelerate is None and len(data) >= ACCELERATE_AFTER):
        machine.accelerate(data)
    machine.advance(final=True)
    return machine.take().encode("latin-1")


class StreamRedactor:
    """Redact a byte stream chunk by chunk, holding back only what could still be a secret.

    ``feed`` returns the redacted bytes that are final; ``flush`` returns the rest. Whatever the
    chunking, ``b"".join(feeds) + flush()`` equals :func:`redact_bytes` of the whole stream. What is
    held back is bounded: an incomplete line (at most about :data:`MAX_LINE` characters) plus a PEM
    block being held (at most about :data:`PEM_HOLD_CAP`) plus the last chunk fed.
    """

    def __init__(self, *, accelerate: bool | None = None) -> None:
        """``accelerate``: use the Hyperscan gate (True: from the start, where installed; None:
        once :data:`ACCELERATE_AFTER` bytes were fed; False: never). Same output either way."""
        self._machine = _Machine(keep_findings=False)
        self._flushed = False
        self._accelerate = accelerate
        self._fed = 0
        if accelerate:
            self._machine.accelerate()

    @property
    def accelerated(self) -> bool:
        """Whether the Hyperscan gate is in use."""
        return self._machine.scratch is not None

    def feed(self, chunk: bytes) -> bytes:
        """Add ``chunk``; return the redacted output that no later byte can change."""
        if self._flushed:
            raise ValueError("feed() after flush()")
        if self._accelerate is None and self._fed < ACCELERATE_AFTER:
            self._fed += len(chunk)
            if self._fed >= ACCELERATE_AFTER:
                self._machine.accelerate()
        self._machine.push(chunk.decode("latin-1"), chunk)
        return self._machine.take().encode("latin-1")

    def flush(self) -> bytes:
        """End of stream: return everything still held, redacted."""
        if not self._flushed:
            self._flushed = True
            self._machine.finish()
        return self._machine.take().encode("latin-1")

    @property
    def counts(self) -> dict[str, int]:
        """How many secrets each rule has redacted so far."""
        return dict(self._machine.counts)

    @property
    def dropped_newlines(self) -> int:
        """Line feeds fed so far that are inside redactions: input lines = output lines + this."""
        return self._machine.dropped_newlines

    @property
    def held(self) -> int:
        """Characters kept between calls: held back for a decision, plus a little context."""
        m = self._machine
        return len(m.buf) - m.keep_from() + m.pending_len
