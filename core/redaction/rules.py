"""The redaction rules and the value checks' parameters, as data: one record per rule.

Issue 13 asks for the rules as data rather than code: adding or tuning a rule means editing a
record here, and :mod:`core.redaction.ruleset` turns the records into runnable rules. The table
is Python literals rather than TOML because it is read on every harness hook that redacts a line:
loading a compiled module is unmarshalling constants, while ``tomllib`` (with ``datetime``) costs
more than that hook's whole redaction. Nothing here runs; every value is a plain string, number
or tuple.

Each record is a dict (checked by mypy as :class:`RuleRecord`); a field left out takes its
default:

- ``name``: what a redaction is called (``[REDACTED:<name>]``).
- ``keywords``: lowercase ASCII literals, one of which every match contains (the literal gate).
- ``pattern``: the regex, ``re.ASCII`` (and ``re.IGNORECASE`` with ``ignore_case``). No character
  class may match ``\\n`` or ``\\r``, and every quantifier is bounded (``MAX_MATCH``).
- ``select``: how a match becomes what is redacted: ``"match"`` (the default: the whole match,
  when the first
  of ``parts`` that matched, or the match itself without ``parts``, passes ``check``),
  ``"group"`` (only the part ``parts[0]``, when it passes ``check``), or one of the context
  rules' own selectors: ``"curl-credentials"`` (the password of ``-u user:password``) and
  ``"generic-secret"`` (the value after a secret-looking key).
- ``check``: a value check by name (``"random-enough"``, ``"looks-like-secret"``,
  ``"url-password"``, ``"pem-body"``; absent: none), ``entropy`` its threshold where it has one.
- ``anchored``: try the regex only where one of its starts occurs (``pattern.match``) instead of
  scanning a block holding a keyword; the starts are ``start_words`` (default: the keywords)
  in ``start_form``: ``"word"`` (the match starts with the word), ``"word+hex-pair"`` (the word
  and two hex digits) or ``"key-name"`` (a key name and what the generic rule allows after one).
- ``locator``: anchored rules, optionally: a case-sensitive, fixed-width regex and its width that
  the start of every match fullmatches; the Hyperscan gate finds these places instead of the
  starts (which are many more: ``ac`` + two hex digits is in every hex id).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

RULESET_VERSION = "2026.11.2"
"""Version of the rule set; callers record it with everything they redact.

2026.11.2: the aws-secret-access-key rule is gated on every spelling its regex accepts
(``secret-access-key``, ``secret_accesskey``, …), not only two of them.
"""


if TYPE_CHECKING:  # a record is a plain dict at run time: no class to build on a hook's path
    from typing import NotRequired, TypedDict

    class RuleRecord(TypedDict):
        """One rule as data (the fields are described in the module docstring)."""

        name: str
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
        locator: NotRequired[tuple[str, int]]


GENERIC_KEY_NAMES = (
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
"""The key names the generic rule looks after (its ``kw`` group lists them in this order)."""

RULE_TABLE: tuple[RuleRecord, ...] = (
    {  # a PEM block on one line: JSON service-account keys, escaped newlines
        "name": "private-key",
        "keywords": ("private key",),
        "pattern": (
            r"-----BEGIN[ A-Z0-9]{0,32}PRIVATE KEY(?: BLOCK)?-----"
            r"(?P<body>(?:[^\r\n-]|-(?!----)){32,16384}+)"
            r"-----END[ A-Z0-9]{0,32}PRIVATE KEY(?: BLOCK)?-----"
        ),
        "parts": ("body",),
        "check": "pem-body",
    },
    {
        "name": "jwt",
        "keywords": ("eyj",),
        "pattern": (
            r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,2048}+\.eyJ[A-Za-z0-9_-]{8,16384}+"
            r"\.[A-Za-z0-9_-]{0,2048}+"
        ),
    },
    {
        "name": "aws-access-key-id",
        "keywords": ("akia", "asia", "abia", "acca", "a3t"),
        "pattern": (
            r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)(?<![A-Za-z0-9_-]....)"
            r"(?P<body>[A-Z2-7]{16})(?![A-Za-z0-9])"
        ),
        "parts": ("body",),
        "check": "random-enough",
    },
    {
        "name": "aws-secret-access-key",
        "keywords": (
            "secretaccesskey",
            "secretaccess_key",
            "secretaccess-key",
            "secret_accesskey",
            "secret_access_key",
            "secret_access-key",
            "secret-accesskey",
            "secret-access_key",
            "secret-access-key",
        ),
        "pattern": (
            r"secret[_-]?access[_-]?key[\"']?[ \t]{0,4}(?::|=>|=)[ \t]{0,4}[\"']?"
            r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        "select": "group",
        "parts": ("s",),
        "check": "random-enough",
        "entropy": 3.5,
        "ignore_case": True,
        "anchored": True,
    },
    {
        "name": "aws-bedrock-key",
        "keywords": ("absk",),
        "pattern": (
            r"ABSKQmVkcm9ja0FQSUtleS1(?<![A-Za-z0-9+/]ABSKQmVkcm9ja0FQSUtleS1)"
            r"[A-Za-z0-9+/]{100,269}+={0,2}(?![A-Za-z0-9+/=])"
        ),
    },
    {
        "name": "gcp-api-key",
        "keywords": ("aiza",),
        "pattern": r"AIza(?<![A-Za-z0-9_-]AIza)(?P<body>[0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])",
        "parts": ("body",),
        "check": "random-enough",
    },
    {
        "name": "google-oauth",
        "keywords": ("gocspx-", "ya29.", "1//0"),
        "pattern": (
            r"GOCSPX-(?<![A-Za-z0-9_-]GOCSPX-)(?P<a>[A-Za-z0-9_-]{28})(?![A-Za-z0-9_-])"
            r"|ya29\.(?<![A-Za-z0-9_-]ya29\.)(?P<b>[0-9A-Za-z_-]{20,2048}+)"
            r"|1//0(?<![A-Za-z0-9_/-]1//0)(?P<c>[0-9A-Za-z_-]{30,512}+)"
        ),
        "parts": ("a", "b", "c"),
        "check": "random-enough",
    },
    {
        "name": "azure-storage-key",
        "keywords": ("accountkey", "sharedaccesskey"),
        "pattern": (
            r"(?:AccountKey|SharedAccessKey)=(?P<s>[A-Za-z0-9+/]{40,100}={0,2})(?![A-Za-z0-9+/=])"
        ),
        "select": "group",
        "parts": ("s",),
        "check": "random-enough",
    },
    {
        "name": "azure-sas-signature",
        "keywords": ("sig=",),
        "pattern": r"sig=(?<=[?&;]sig=)(?P<s>[A-Za-z0-9%+/]{30,200}+(?:=|%3[dD]){0,2})",
        "select": "group",
        "parts": ("s",),
        "check": "random-enough",
    },
    {
        "name": "azure-client-secret",
        "keywords": ("q~",),
        "pattern": (
            r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"
        ),
        "check": "random-enough",
    },
    {
        "name": "github-token",
        "keywords": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        "pattern": (
            r"g(?:h[pousr]_(?<![A-Za-z0-9_]gh[pousr]_)(?P<a>[A-Za-z0-9]{36,251}+)(?![A-Za-z0-9_])"
            r"|ithub_pat_(?<![A-Za-z0-9_]github_pat_)(?P<b>[A-Za-z0-9_]{82,244}+))"
        ),
        "parts": ("a", "b"),
        "check": "random-enough",
    },
    {
        "name": "gitlab-token",
        "keywords": (
            "glpat-",
            "glptt-",
            "glrt-",
            "gldt-",
            "glft-",
            "glimt-",
            "glcbt-",
            "glsoat-",
            "gloas-",
            "glagent-",
        ),
        "pattern": (
            r"gl(?:pat|ptt|rt|dt|ft|imt|cbt|soat|oas|agent)-"
            r"(?P<a>[A-Za-z0-9_-]{20,300}+(?:\.[A-Za-z0-9]{2,16}){0,2}+)"
        ),
        "parts": ("a",),
        "check": "random-enough",
    },
    {
        "name": "gitlab-runner-token",
        "keywords": ("gr1348941",),
        "pattern": r"GR1348941(?P<a>[A-Za-z0-9_-]{20,40}+)",
        "parts": ("a",),
        "check": "random-enough",
    },
    {
        "name": "slack-token",
        "keywords": ("xox", "xapp-"),
        "pattern": (
            r"xox(?<![A-Za-z0-9]xox)(?:"
            r"[abposre]-(?:[0-9]{1,3}-)?[0-9]{6,15}-(?:[0-9]{6,15}-){0,3}+[A-Za-z0-9]{8,128}+"
            r"|e-[0-9]-[A-Za-z0-9]{100,256}+"
            r"|e\.xox[bp]-[0-9]-[A-Za-z0-9]{100,256}+"
            r")(?![A-Za-z0-9#*-])"
            r"|xapp-(?<![A-Za-z0-9]xapp-)[0-9]-[A-Z0-9]{8,15}-[0-9]{10,16}-[a-z0-9]{32,80}+"
        ),
    },
    {
        "name": "slack-webhook",
        "keywords": ("hooks.slack.com",),
        "pattern": (
            r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9+/_-]{20,200}+)"
        ),
        "select": "group",
        "parts": ("s",),
    },
    {
        "name": "stripe-key",
        "keywords": ("k_live", "k_test", "whsec_"),  # sk_live_ rk_live_ sk_test_ rk_test_ whsec_
        "pattern": (
            r"[sr]k_(?:live|test)_(?<![A-Za-z0-9_][sr]k_(?:live|test)_)(?P<a>[A-Za-z0-9]{16,247}+)"
            r"|whsec_(?<![A-Za-z0-9_]whsec_)(?P<b>[A-Za-z0-9+/=]{24,128}+)"
        ),
        "parts": ("a", "b"),
        "check": "random-enough",
    },
    {
        "name": "anthropic-key",
        "keywords": ("sk-ant-",),
        "pattern": r"sk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{93}AA(?![A-Za-z0-9_-])",
    },
    {
        "name": "openai-key",
        "keywords": ("sk-",),
        "pattern": (
            r"sk-(?<![A-Za-z0-9_-]sk-)(?:"
            r"(?:proj|svcacct|admin)-(?P<a>[A-Za-z0-9_-]{40,300}+)"
            r"|(?P<b>[A-Za-z0-9]{48})(?![A-Za-z0-9_-]))"
        ),
        "parts": ("a", "b"),
        "check": "random-enough",
    },
    {
        "name": "npm-token",
        "keywords": ("npm_",),
        "pattern": r"npm_(?<![A-Za-z0-9_]npm_)(?P<body>[A-Za-z0-9]{36})(?![A-Za-z0-9])",
        "parts": ("body",),
        "check": "random-enough",
    },
    {
        "name": "pypi-token",
        "keywords": ("pypi-ageichlwas5vcmc",),
        "pattern": r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,2048}+",
    },
    {
        "name": "sendgrid-key",
        "keywords": ("sg.",),
        "pattern": (
            r"SG\.(?<![A-Za-z0-9_]SG\.)[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"
        ),
    },
    {
        "name": "twilio-api-key",
        "keywords": ("sk",),
        "pattern": r"SK(?<![A-Za-z0-9_]SK)(?P<body>[0-9a-fA-F]{32})(?![0-9A-Za-z_])",
        "parts": ("body",),
        "check": "random-enough",
        "anchored": True,  # "sk" (skipped, task) is in every block: try only "SK" + hex
        "start_form": "word+hex-pair",
        "locator": ("SK[0-9a-fA-F]{32}", 34),
    },
    {
        "name": "twilio-account-sid",
        "keywords": ("ac",),
        "pattern": r"AC(?<![A-Za-z0-9_]AC)(?P<body>[0-9a-f]{32})(?![0-9A-Za-z_])",
        "parts": ("body",),
        "check": "random-enough",
        "anchored": True,  # as twilio-api-key: "ac" is everywhere, "AC" + hex is not
        "start_form": "word+hex-pair",
        "locator": ("AC[0-9a-f]{32}", 34),
    },
    {
        "name": "huggingface-token",
        "keywords": ("hf_", "api_org_"),
        "pattern": (
            r"hf_(?<![A-Za-z0-9_]hf_)(?P<a>[A-Za-z0-9]{30,40})(?![A-Za-z0-9])"
            r"|api_org_(?<![A-Za-z0-9_]api_org_)(?P<b>[A-Za-z0-9]{30,40})(?![A-Za-z0-9])"
        ),
        "parts": ("a", "b"),
        "check": "random-enough",
    },
    {
        "name": "authorization-header",
        "keywords": ("authorization",),
        "pattern": (
            r"authorization[\"']?[ \t]{0,8}[:=][ \t]{0,8}[\"']?"
            r"(?:(?:bearer|basic|token|api-token|apikey|api-key|key|jwt|dpop|sso-key|otp|"
            r"gitlab-token|negotiate|ntlm|digest)[ \t]{1,8})?"
            r"(?P<s>[^\s\"'`,;]{1,4096}+)"
        ),
        "select": "group",
        "parts": ("s",),
        "check": "looks-like-secret",
        "ignore_case": True,
        "anchored": True,
    },
    {
        "name": "bearer-token",
        "keywords": ("bearer",),
        "pattern": r"bearer[ \t]{1,8}(?P<s>[A-Za-z0-9._~+/=-]{16,4096}+)",
        "select": "group",
        "parts": ("s",),
        "check": "looks-like-secret",
        "ignore_case": True,
        "anchored": True,
    },
    {
        "name": "curl-credentials",
        "keywords": ("-u", "--user"),
        "pattern": (
            r"(?<!\S)(?:--user|-u|-U)(?:[ \t]{1,8}|=|(?=[\"']))"
            r"(?P<arg>(?:\"[^\"\r\n]{0,256}+\"|'[^'\r\n]{0,256}+'|[^\s\"']{1,256}+){1,4}+)"
        ),
        "select": "curl-credentials",
        "anchored": True,
    },
    {
        "name": "url-credentials",
        "keywords": ("://",),
        "pattern": r"://(?P<user>[^\s/:@'\"<>]{0,128}+):(?P<s>[^\s/'\"<>]{1,256})@",
        "select": "group",
        "parts": ("s",),
        "check": "url-password",
    },
    {
        "name": "generic-secret",
        "keywords": ("pass", "pwd", "secret", "token", "auth", "credential", "key"),
        "pattern": (
            r"(?:(?<=-)(?P<flag>))?"  # --password VALUE: a bare space separates only after a dash
            r"(?P<kw>password|passwd|pwd|passphrase|pass|secret|token|auth|credentials|credential|key)"
            r"(?:[_.-]?[0-9]{1,3})?"
            r"(?P<kq>\\?[\"']?)"
            r"(?P<sep>[ \t]{0,4}(?::=|=>|[:=,])[ \t]{0,8}|(?(flag)[ \t]{1,4}|(?!)))"
            r"(?:\\?\"(?P<dq>[^\"\r\n]{1,512})\"|\\?'(?P<sq>[^'\r\n]{1,512})'"
            r"|(?P<bare>[^\s\"'`,;&<>(){}\[\]]{1,512}+))"
        ),
        "select": "generic-secret",
        "ignore_case": True,
        "anchored": True,
        "start_words": GENERIC_KEY_NAMES,
        "start_form": "key-name",
    },
)
"""Every rule, in priority order: where matches overlap, the redaction is named after the
earliest rule among them (token formats first, context rules next, the generic rule last)."""


# --- what the value checks look for ----------------------------------------------------------

PEM_MIN_BODY = 32
"""Base64 characters a BEGIN…END block needs to count as a key (``anything`` does not)."""
PEM_MIN_TRUNCATED = 64
"""Base64 characters a block cut short (no END line) needs to be redacted as a truncated key."""

SECRET_MIN_LENGTH = 8
"""Shortest value after a secret-looking key that can be a credential."""

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
    "<",
    ">",
    "${",
    "{{",
    "$(",
    "%(",
    "%s",
)
"""Lowercase pieces that mark a value as a placeholder, a mask or a template."""

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
"""A bare ``key`` counts only inside a name like these (``api_key``, not ``primary_key``)."""
REJECTED_KEY_PARTS = ("public", "pubkey", "csrf", "xsrf", "nonce")
"""Key names holding one of these are not secrets (public keys, anti-forgery tokens)."""

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

TOKEN_MASK_PARTS = ("xxxx", "example")
"""Lowercase pieces that mark the body of a known token format as a mask or an example."""
