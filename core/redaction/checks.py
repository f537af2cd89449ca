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
    GENERIC_KEY_NAMES,
    KEY_NAME_CHARS,
    NUMBER_SECRET_DIGITS,
    PATH_SEGMENT_PATTERN,
    PEM_MIN_BODY,
    PLACEHOLDER_MAX,
    PLACEHOLDER_PARTS,
    PLACEHOLDER_WORDS,
    QUALIFIED_KEY_PATTERN,
    REFERENCE_PATTERN,
    REJECTED_KEY_PARTS,
    SECRET_MIN_LENGTH,
    TEMPLATE_PATTERN,
    TOKEN_EXAMPLE_PARTS,
    TOKEN_TAIL,
    UNQUALIFIED_KEY_MIN,
    URL_PLACEHOLDER_PARTS,
    URL_PLACEHOLDERS,
    UUID_PATTERN,
    WHOLE_WORD_KEY_NAMES,
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
_WORD_SEGMENT = lazy_pattern(r"(?P<letters>[A-Za-z]+)[0-9]{0,3}", re.ASCII)
_CONSONANT_RUN = lazy_pattern(r"[b-df-hj-np-tv-xzB-DF-HJ-NP-TV-XZ]{5}", re.ASCII)
_CODE_SEPARATORS = lazy_pattern(r"[._:/()\[\]-]+", re.ASCII)
_HUMP = lazy_pattern(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", re.ASCII)
_TEMPLATE = lazy_pattern(TEMPLATE_PATTERN, re.ASCII)
_URL = lazy_pattern(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://", re.ASCII)
_REFERENCE = lazy_pattern(REFERENCE_PATTERN, re.ASCII)
_MASK = lazy_pattern(r"xxxx|\*\*\*\*|####|\.\.\.\.", re.ASCII)
_MASK_RUNS = lazy_pattern(r"x{4,}|\*{4,}|#{4,}|\.{4,}", re.ASCII)


def _mask_share(lowered: str) -> bool:
    """Runs of mask characters make a quarter of the value or more. A long random value holds
    four x's (or dots, stars) in a row now and then, and is no mask."""
    return 4 * sum(len(run) for run in _MASK_RUNS().findall(lowered)) >= len(lowered)


def _masked(lowered: str) -> bool:
    """A mask the value is made of: short, or its runs of mask characters a quarter of it."""
    return len(lowered) <= PLACEHOLDER_MAX or _mask_share(lowered)


_PLACEHOLDER = lazy_pattern("|".join(re.escape(part) for part in PLACEHOLDER_PARTS))
_TOKEN_EXAMPLE = lazy_pattern(
    "|".join(re.escape(part) for part in TOKEN_EXAMPLE_PARTS), re.IGNORECASE
)
_HEX = lazy_pattern(r"[0-9a-fA-F]+", re.ASCII)
_KEY_WORD_SPLIT = lazy_pattern(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", re.ASCII)


def shannon_entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character.

    As ``log2(n) - sum(c * log2(c)) / n`` over the character counts ``c``, with ``c * log2(c)``
    looked up: the checks compute it for every candidate value, and ``log2`` per character kind
    was a tenth of the redactor's time on agent logs.
    """
    n = len(value)
    if n == 0:
        return 0.0
    table = _c_log_c(n)
    return max(0.0, math.log2(n) - sum(map(table.__getitem__, Counter(value).values())) / n)


_C_LOG_C: list[float] = [0.0]


def _c_log_c(n: int) -> list[float]:
    """``c * log2(c)`` for every count up to ``n`` (grown on demand, kept)."""
    table = _C_LOG_C
    for c in range(len(table), n + 1):
        table.append(c * math.log2(c))
    return table


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


def _word_segment(segment: str) -> bool:
    """Whether one piece of a name is made of words (``environ``, ``SECRET``,
    ``AbstractBasicAuthHandler``, ``oauth2``, ``v1``), not random characters: letters whose
    humps are at most 20 long with no run of five consonants anywhere (random letters nearly
    always have one), then at most three digits; or a number of up to four digits."""
    if segment.isdigit():
        return len(segment) <= 4
    m = _WORD_SEGMENT().fullmatch(segment)
    if m is None:
        return False
    letters = m.group("letters")
    if _CONSONANT_RUN().search(letters):
        return False
    return all(len(hump) <= 20 for hump in _HUMP().findall(letters))


def is_code_reference(value: str) -> bool:
    """Whether a value is a name in code rather than data: an identifier, a dotted path, an
    index or a call made of word pieces (``self._authkey``, ``os.environ``,
    ``settings.SECRET_KEY``, ``authorization[1].encode(``, ``token_value``).

    Random pieces (``sgp_<40 hex>``, ``dop_v1_<64 hex>``, ``<32 hex>-us13``) are not words, so a
    token with underscores or dashes is not taken for a name.
    """
    v = value.rstrip("\\")
    if not v or len(v) > 128:
        return False
    pieces = [piece for piece in _CODE_SEPARATORS().split(v) if piece]
    return bool(pieces) and all(_word_segment(piece) for piece in pieces)


def _is_prose(value: str) -> bool:
    """Three or more words separated by spaces, most of them plain words: a sentence."""
    words = value.split()
    if len(words) < 3:
        return False
    plain = sum(word.strip("\"'.,:;!?()\\n").isalpha() for word in words)
    return plain >= 0.6 * len(words)


def looks_like_secret(value: str, min_len: int = SECRET_MIN_LENGTH) -> bool:
    """Whether a value after a credential-like key (or in an Authorization header) is a secret.

    A keyed value is a secret whatever its case or punctuation, unless it is clearly not one:
    too short, a variable reference or template (``$X``, ``${x}``, ``{{ x }}``, ``<token>``,
    ``%s``), a placeholder or mask (``xxxx``, ``****``, ``changeme``, ``EXAMPLE``, ``1234``), a
    boolean or ``null``, a number, a path, URL or file name, a name in code (``self.token``,
    ``os.environ``, :func:`is_code_reference`), or the same few characters repeated. UUIDs count
    as secrets (API keys often are UUIDs). Values with spaces that look like code between two
    string literals (``" + token + "``, ``: lambda n: b``) are not values at all.
    """
    if value[:1].isspace() or value[-1:].isspace():
        return False
    v = value.rstrip("\\")
    if len(v) < min_len:
        return False
    if " " in v and (any(c in v for c in CODE_CHARS) or _is_prose(v)):
        return False
    lowered = v.lower()
    if lowered in PLACEHOLDER_WORDS or _REFERENCE().fullmatch(v) or _TEMPLATE().search(v):
        return False
    if _MASK().search(lowered) and _masked(lowered):
        return False  # xxxx, ****: masked
    if len(v) <= PLACEHOLDER_MAX and _PLACEHOLDER().search(lowered):
        return False  # (a long random value holds "token" or "1234" now and then)
    if _URL().match(v) or _is_path(v) or _FILENAME().fullmatch(v):
        return False
    if _UUID().fullmatch(v):
        return len(set(v.replace("-", ""))) > 4
    core = v.rstrip("=")
    if core.isdigit():
        return len(core) >= NUMBER_SECRET_DIGITS
    if is_code_reference(v):
        return False
    # the same few characters over and over (``abababab``, ``password=password=…``) are not
    # a secret: a random value of any alphabet has more kinds of character
    return len(set(core)) >= min(12, 4 + len(core) // 8)


def random_enough(value: str, threshold: float = 3.0) -> bool:
    """Token bodies of a known format: reject examples, masks like ``xxxx…`` and repeated digits.

    A body is a mask when its runs of x's make a quarter of it: one random body in some
    thirty thousand holds ``xxxx`` somewhere and is a live token all the same. The entropy bar
    scales with length (a random 16-character base32 body can score 2.9).
    """
    if _TOKEN_EXAMPLE().search(value) or _mask_share(value.lower()):
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


def value_tail_end(text: str, end: int, limit: int) -> int:
    """Where a header value that ``end`` cut short really ends (at a blank, a quote, ``,`` or
    ``;``), followed at most :data:`VALUE_EXTEND` characters."""
    tail = _HEADER_TAIL().match(text, end, min(limit, end + VALUE_EXTEND))
    return tail.end() if tail else end


def url_password_ok(value: str) -> bool:
    """Whether the password of URL userinfo (``://user:password@``) is not a placeholder."""
    if value.lower() in URL_PLACEHOLDERS or value[0] in "$%<[{*":
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


def _key_words(name: str) -> list[str]:
    """The words of a key name, lowercased (``GITHUB_PAT`` -> github, pat; ``dbPw`` -> db, pw)."""
    return [w.lower() for w in _KEY_WORD_SPLIT().split(name) if w]


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
    if name_start >= 3 and text.startswith("://", name_start - 3):
        return False  # https://oauth2:…@host is URL userinfo, the url-credentials rule's
    if any(bad in name for bad in REJECTED_KEY_PARTS):
        return False
    kw = m.group("kw").lower()
    if kw == "key" and not _KEY_QUALIFIED().search(name) and not _random_value(m):
        return False  # sort(key=…), cache_key: a bare key counts only before a random value
    if kw in WHOLE_WORD_KEY_NAMES and kw not in _key_words(text[name_start : m.end("kw")]):
        return False  # PAT= or github_pat:, not compat= or a pattern
    # password = read_secret(…): a call, not a value
    return not (m.group("bare") is not None and text.startswith("(", m.end()))


def credential_key(name: str) -> bool:
    """Whether a key name is credential-like (``DB_PASSWORD``, ``stripe_api_key``, ``GH_PAT``),
    by the generic rule's key names and its checks (a qualified ``key``, no ``public``…)."""
    lowered = name.lower()
    if any(bad in lowered for bad in REJECTED_KEY_PARTS):
        return False
    words = _key_words(name)
    for kw in GENERIC_KEY_NAMES:
        if kw not in lowered:
            continue
        if kw == "key" and not _KEY_QUALIFIED().search(lowered):
            continue
        if kw in WHOLE_WORD_KEY_NAMES and kw not in words:
            continue
        return True
    return False


_NAME_BEFORE = lazy_pattern(
    r"(?<![A-Za-z0-9_])(?:name|key)[\"']?[ \t]{0,4}[:=][ \t]{0,8}[\"']?"
    r"(?P<key>[A-Za-z0-9_.-]{2,64})[\"']?[ \t,]{0,8}(?:\r?\n[ \t-]{0,32})?[\"']?\Z",
    re.ASCII | re.IGNORECASE,
)
NAMED_VALUE_LOOKBACK = 120
"""Characters before ``value`` searched for its ``name``: less than the text the machine keeps
before its position (``buffer.CONTEXT``), so streaming sees exactly what a whole text shows."""


VALUE_BOUND = 512
"""Characters a keyed value's regex takes at most (every try scans that far, so it stays
small); a value that fills it is followed to its end here, once it is known to be a secret."""
VALUE_EXTEND = 16384
"""How far past the bound a value is followed (every try may do it once: bounded, linear)."""
_HEADER_TAIL = lazy_pattern(r"[^\s\"'`,;]*", re.ASCII)
_BARE_TAIL = lazy_pattern(r"[^\s\"'`,;&<>(){}\[\]]*", re.ASCII)


def _whole_value(m: re.Match[str], group: str, start: int, end: int) -> int:
    """Where a keyed value that filled :data:`VALUE_BOUND` really ends: its closing quote, or
    the end of its run of value characters (on its line, within the match's end position)."""
    if end - start < VALUE_BOUND:
        return end
    text, limit = m.string, min(m.endpos, end + VALUE_EXTEND)
    nl, cr = text.find("\n", end, limit), text.find("\r", end, limit)
    stop = min(p for p in (nl, cr, limit) if p >= 0)
    if group == "bare":
        tail = _BARE_TAIL().match(text, end, stop)
        return tail.end() if tail else end
    close = text.find('"' if group == "dq" else "'", end, stop)
    return stop if close < 0 else close


def select_named_value(m: re.Match[str]) -> list[Span]:
    """The value of ``name: DB_PASSWORD`` / ``value: …`` (its name on its line or the last)."""
    text = m.string
    start = m.start()
    before = _NAME_BEFORE().search(text, max(0, start - NAMED_VALUE_LOOKBACK), start)
    if before is None or not credential_key(before.group("key")):
        return []
    for group in _GENERIC_VALUES:
        value = m.group(group)
        if value is not None:
            if not looks_like_secret(value):
                return []
            start, end = m.span(group)
            return [(start, _whole_value(m, group, start, end))]
    return []


def _random_value(m: re.Match[str]) -> bool:
    """Whether a generic match's value is long and random enough to be a credential even after
    a key name as vague as ``key`` (``Using Key=rWE8I0axy6Fvw40RE8ts…``, ``?key=AemQ06R3…``)."""
    value = next((v for v in m.group(*_GENERIC_VALUES) if v is not None), "")
    if len(value) < UNQUALIFIED_KEY_MIN or _HEX().fullmatch(value):
        return False  # a hex digest after "key" is a cache or object key, not a credential
    return random_token(value)


def select_xml_element(m: re.Match[str]) -> list[Span]:
    """The text of ``<password>…</password>``: its tag must be credential-like and the text a
    secret, or hold a random run (Jenkins keeps secrets as ``{AQAAABAAA…}``)."""
    text = m.string
    start = m.start()
    opening = text.rfind("<", max(0, start - 64), start)
    if opening < 0 or not credential_key(text[opening + 1 : m.end("kw")]):
        return []
    value = m.group("v").strip()
    if looks_like_secret(value) or (
        value[:1] == "{" and value[-1:] == "}" and any(random_token(w) for w in value[1:-1].split())
    ):
        return [m.span("v")]
    return []


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
            end = _whole_value(m, group, start, end)
            while end > start and m.string[end - 1] == "\\":
                end -= 1  # keep the escape of a closing \" in JSON-in-a-string
            return [(start, end)]
    return []
