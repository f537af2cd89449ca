"""Value checks: whether what a rule matched is a credential, not a placeholder or a word.

A regex finds what has the shape of a secret; these checks decide whether it is one, so that
``password=${DB_PASSWORD}``, ``api_key = 'YOUR_API_KEY'`` or ``token: hunter`` stay readable.
Rules name their check in :mod:`core.redaction.rules`; the word lists and patterns the checks
look for are data there too. The two context rules whose decision needs the text around the
match (``curl -u`` and the generic key = value rule) have their selectors here.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from functools import cache

from core.redaction.rules import (
    CODE_CHARS,
    CURL_PLACEHOLDER_PARTS,
    CURL_PLACEHOLDERS,
    FILENAME_PATTERN,
    KEY_NAME_CHARS,
    PATH_SEGMENT_PATTERN,
    PEM_MIN_BODY,
    PLACEHOLDER_PARTS,
    PLACEHOLDER_WORDS,
    QUALIFIED_KEY_PATTERN,
    REJECTED_KEY_PARTS,
    SECRET_MIN_LENGTH,
    TOKEN_MASK_PARTS,
    TOKEN_TAIL,
    URL_PLACEHOLDER_PARTS,
    URL_PLACEHOLDERS,
    UUID_PATTERN,
    WORDISH_PATTERN,
)

Span = tuple[int, int]


def lazy_pattern(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A regex compiled on first use: the value checks and PEM patterns serve only texts that
    hold a candidate, and compiling them all cost ~1.6 ms of every hook that redacts a line."""
    return cache(lambda: re.compile(pattern, flags))


_UUID = lazy_pattern(UUID_PATTERN)
_WORDISH = lazy_pattern(WORDISH_PATTERN, re.ASCII)
_FILENAME = lazy_pattern(FILENAME_PATTERN, re.ASCII)
_PATH_SEGMENT = lazy_pattern(PATH_SEGMENT_PATTERN, re.ASCII)
_KEY_QUALIFIED = lazy_pattern(QUALIFIED_KEY_PATTERN, re.ASCII)
_B64_CHAR = lazy_pattern(r"[A-Za-z0-9+/]")


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


def _is_path(value: str) -> bool:
    """``/home/me/x``, ``~/.ssh``, ``../conf``, ``C:\\x``: segments of lowercase words or names."""
    if len(value) > 2 and value[1] == ":" and value[2] == "\\":
        return True
    if not value.startswith(("/", "~/", "./", "../")):
        return False
    segments = value.lstrip("~.").split("/")
    return all(_PATH_SEGMENT().fullmatch(seg) or _WORDISH().fullmatch(seg) for seg in segments)


def _classes(value: str) -> int:
    """How many of lowercase, uppercase, digits and other characters ``value`` mixes."""
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


def looks_like_secret(value: str, min_len: int = SECRET_MIN_LENGTH) -> bool:
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
    if " " in v and any(c in v for c in CODE_CHARS):
        return False
    lowered = v.lower()
    if v[0] in "$%<[{`" or lowered in PLACEHOLDER_WORDS:
        return False
    if any(part in lowered for part in PLACEHOLDER_PARTS):
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


def random_enough(value: str, threshold: float = 3.0) -> bool:
    """Token bodies of a known format: reject masks like ``xxxx…`` and repeated digits.

    The entropy bar scales with length (a random 16-character base32 body can score 2.9).
    """
    lowered = value.lower()
    if any(part in lowered for part in TOKEN_MASK_PARTS):
        return False
    return shannon_entropy(value) >= min(threshold, 0.6 * math.log2(max(2, len(value))))


def random_token(value: str) -> bool:
    """A token body that is random, not a word joined by underscores (``live_reload_when…``):
    random enough, holding a digit, and not an identifier."""
    if not random_enough(value) or not any(c.isdigit() for c in value):
        return False
    return not _WORDISH().fullmatch(value)


def token_tail_end(text: str, end: int, limit: int) -> int:
    """Where the run of token characters (:data:`TOKEN_TAIL`) starting at ``end`` stops."""
    while end < limit and text[end] in TOKEN_TAIL:
        end += 1
    return end


def url_password_ok(value: str) -> bool:
    """Whether the password of URL userinfo (``://user:password@``) is not a placeholder."""
    if len(value) < 4 or value.lower() in URL_PLACEHOLDERS or value[0] in "$%<[{*":
        return False
    lowered = value.lower()
    return not any(part in lowered for part in URL_PLACEHOLDER_PARTS)


def pem_body_ok(body: str) -> bool:
    """Whether a one-line PEM block's body (escaped line ends and all) holds key material."""
    body = body.replace("\\n", "").replace("\\r", "")
    return len(_B64_CHAR().findall(body)) >= PEM_MIN_BODY


# --- curl -u / --user -----------------------------------------------------------------------


def _credential_ok(value: str) -> bool:
    """Whether one half of ``curl -u user:password`` is a credential, not a placeholder."""
    v = value.strip("\"'")
    if len(v) >= 2 and v[0] == "{" and v[-1] == "}" and not v.startswith("{{"):
        v = v[1:-1]
    if len(v) < 6 or v.lower() in CURL_PLACEHOLDERS or any(c.isspace() for c in v):
        return False
    if v[0] in "$%<[{" or any(c in v for c in "<>") or "${" in v or "$(" in v:
        return False
    lowered = v.lower()
    if any(part in lowered for part in CURL_PLACEHOLDER_PARTS):
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


def select_curl(m: re.Match[str]) -> list[Span]:
    """The password of ``-u user:password`` (or the user, when it is an API key alone)."""
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


# --- generic key = value --------------------------------------------------------------------

_GENERIC_VALUES = ("dq", "sq", "bare")


def _key_name(text: str, start: int, end: int) -> tuple[int, str]:
    """The identifier that ends at ``end`` and contains ``start`` (at most 64 characters back)."""
    i = start
    limit = max(0, start - 64)
    while i > limit and text[i - 1] in KEY_NAME_CHARS:
        i -= 1
    return i, text[i:end].lower()


def _generic_context_ok(m: re.Match[str]) -> bool:
    """Whether the key and separator of a generic match introduce a value, not prose or code."""
    text = m.string
    start = m.start()
    sep = m.group("sep").strip()
    if not sep and (start == 0 or text[start - 1] != "-"):
        return False  # `--password VALUE` only, not prose like "token abc"
    if sep == "," and not (m.group("kq") and m.group("bare") is None):
        return False  # f("api_token", "…") only, not an argument list
    name_start, name = _key_name(text, start, m.end("kw"))
    if text.startswith("://", name_start - 3):
        return False  # https://oauth2:…@host is URL userinfo, the url-credentials rule's
    if any(bad in name for bad in REJECTED_KEY_PARTS):
        return False
    if m.group("kw").lower() == "key" and not _KEY_QUALIFIED().search(name):
        return False
    # password = read_secret(…): a call, not a value
    return not (m.group("bare") is not None and text.startswith("(", m.end()))


def select_generic(m: re.Match[str]) -> list[Span]:
    """The value after a secret-looking key (``DB_PASSWORD=…``, ``"token": "…"``)."""
    # Most matches are `key=17` or `"password": "x"`: the value is too short to be a secret,
    # which looks_like_secret would decide last; deciding it first changes no result.
    dq, sq, bare = m.group(*_GENERIC_VALUES)
    value = dq if dq is not None else sq if sq is not None else bare
    if value is None or len(value.rstrip("\\")) < SECRET_MIN_LENGTH:
        return []
    if not _generic_context_ok(m):
        return []
    for group in _GENERIC_VALUES:
        value = m.group(group)
        if value is not None:
            if not looks_like_secret(value):
                return []
            start, end = m.span(group)
            while end > start and m.string[end - 1] == "\\":
                end -= 1  # keep the escape of a closing \" in JSON-in-a-string
            return [(start, end)]
    return []
