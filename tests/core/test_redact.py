"""The secret redactor (core/redact.py): DESIGN §3 invariant 2, issue 3.

- the gitleaks corpus: recall on `secret` rows ≥ 99%, at most 10% of `not_secret` rows redacted;
- every rule on a credential of its format, and its look-alikes left alone;
- streaming equals whole: any chunking of any input gives exactly `redact_bytes(whole)`
  (hypothesis), secrets and PEM blocks straddling chunk boundaries included;
- binary, non-UTF-8 and `\\r` output pass through byte-for-byte where nothing matches;
- memory stays bounded on endless lines and endless keys;
- hostile input is linear: 8× the input costs about 8× the work, never 64×.
"""

from __future__ import annotations

import random
import string
import time
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redactkit import load_corpus, stream

from core.redaction.redact import (
    MAX_LINE,
    PEM_HOLD_CAP,
    RULES,
    RULESET_VERSION,
    Finding,
    StreamRedactor,
    redact_argv,
    redact_bytes,
    redact_text,
    rule_names,
    shannon_entropy,
)

RNG = random.Random(20261101)
ALNUM = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


# --- the corpus ------------------------------------------------------------------------------


def test_gitleaks_corpus_recall_and_false_positive_rate() -> None:
    rows = load_corpus()
    secret = [r for r in rows if r["label"] == "secret"]
    not_secret = [r for r in rows if r["label"] == "not_secret"]
    missed = [r for r in secret if not redact_text(r["text"])[1]]
    flagged = [r for r in not_secret if redact_text(r["text"])[1]]
    recall = 1 - len(missed) / len(secret)
    fp_rate = len(flagged) / len(not_secret)
    print(
        f"\nruleset {RULESET_VERSION}: recall {recall:.1%} on {len(secret)} secret rows "
        f"({len(missed)} missed); {fp_rate:.1%} of {len(not_secret)} not_secret rows redacted "
        f"({len(flagged)})"
    )
    for r in missed:
        print("  missed:", r["rule_file"], r["text"][:120])
    for r in flagged:
        print("  flagged:", r["rule_file"], r["text"][:120])
    assert recall >= 0.99
    assert fp_rate <= 0.10
    # issue 16: every secret row, and at most 5% of the not_secret rows changed
    assert not missed
    assert fp_rate <= 0.05


def test_corpus_bytes_and_stream_agree_with_text() -> None:
    """The three entry points redact every corpus row identically, in 1-byte chunks too."""
    for row in load_corpus():
        text = row["text"]
        expected = redact_text(text)[0].encode()
        data = text.encode()
        assert redact_bytes(data) == expected, text
        assert stream(data, [1])[0] == expected, text
        assert stream(data, [7, 3, 50])[0] == expected, text


def test_redacting_twice_changes_nothing() -> None:
    for row in load_corpus():
        once = redact_text(row["text"])[0]
        assert redact_text(once) == (once, []), row["text"]


# --- rules, one by one -----------------------------------------------------------------------


def _positive_cases() -> list[tuple[str, str, str]]:
    """(text, secret that must disappear, rule that must report it), generated, not committed."""
    ghp = "ghp_" + rand(36)
    pat = "github_pat_" + rand(22) + "_" + rand(59)
    aws_id = "AKIA" + rand(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    aws_secret = rand(40, ALNUM + "/+")
    gcp = "AIza" + rand(35, ALNUM + "_-")
    sa_key = (
        "-----BEGIN PRIVATE KEY-----\\n"
        + rand(64, ALNUM + "+/")
        + "\\n-----END PRIVATE KEY-----\\n"
    )
    azure = rand(86, ALNUM + "+/") + "=="
    glpat = "glpat-" + rand(20, ALNUM + "_-")
    slack = "xoxb-" + rand(12, string.digits) + "-" + rand(13, string.digits) + "-" + rand(24)
    hook = "T" + rand(8, string.ascii_uppercase) + "/B" + rand(8) + "/" + rand(24)
    stripe = "sk_live_" + rand(24)
    openai = "sk-proj-" + rand(80, ALNUM + "_-")
    openai_legacy = "sk-" + rand(20) + "T3BlbkFJ" + rand(20)
    anthropic = "sk-ant-api03-" + rand(93, ALNUM + "_-") + "AA"
    google = "GOCSPX-" + rand(28, ALNUM + "_-")
    ya29 = "ya29." + rand(120, ALNUM + "_-")
    npm = "npm_" + rand(36)
    pypi = "pypi-AgEIcHlwaS5vcmc" + rand(80, ALNUM + "_-")
    sendgrid = "SG." + rand(22, ALNUM + "_-") + "." + rand(43, ALNUM + "_-")
    twilio = "SK" + rand(32, "0123456789abcdef")
    hf = "hf_" + rand(34)
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI" + rand(20) + "In0." + rand(43, ALNUM + "_-")
    bearer = rand(40, ALNUM + "._-")
    basic = rand(24, ALNUM + "+/") + "=="
    password = rand(10) + "!7Qz"
    return [
        (f"git remote set-url origin https://x:{ghp}@github.com/a/b", ghp, "github-token"),
        (f"GH_TOKEN={pat}", pat, "github-token"),
        (f"aws_access_key_id = {aws_id}", aws_id, "aws-access-key-id"),
        (f"aws_secret_access_key = {aws_secret}", aws_secret, "aws-secret-access-key"),
        (f'"SecretAccessKey": "{aws_secret}",', aws_secret, "aws-secret-access-key"),
        (f"AWS_SECRET-ACCESS_KEY: {aws_secret}", aws_secret, "aws-secret-access-key"),
        (f"key={gcp}&q=1", gcp, "gcp-api-key"),
        (f'  "private_key": "{sa_key}",', sa_key, "private-key"),
        (
            f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={azure};EndpointSuffix=x",
            azure,
            "azure-storage-key",
        ),
        (f"git clone https://oauth2:{glpat}@gitlab.com/a/b.git", glpat, "gitlab-token"),
        (f"SLACK_BOT_TOKEN={slack}", slack, "slack-token"),
        (f"POST https://hooks.slack.com/services/{hook}", hook, "slack-webhook"),
        (f"stripe.api_key = '{stripe}'", stripe, "stripe-key"),
        (f"OPENAI_API_KEY={openai}", openai, "openai-key"),
        (f"using {openai_legacy}", openai_legacy, "openai-key"),
        (f"x-api-key: {anthropic}", anthropic, "anthropic-key"),
        (f'"client_secret": "{google}"', google, "google-oauth"),
        (f"token {ya29} expires", ya29, "google-oauth"),
        (f"//registry.npmjs.org/:_authToken={npm}", npm, "npm-token"),
        (f"password = {pypi}", pypi, "pypi-token"),
        (f"SENDGRID={sendgrid}", sendgrid, "sendgrid-key"),
        (f"twilio key {twilio} created", twilio, "twilio-api-key"),
        (f"huggingface-cli login --token {hf}", hf, "huggingface-token"),
        (f"Cookie: session={jwt}", jwt, "jwt"),
        (f"> Authorization: Bearer {bearer}", bearer, "authorization-header"),
        (f"authorization: Basic {basic}", basic, "authorization-header"),
        (f"-H 'X-Custom: Bearer {bearer}'", bearer, "bearer-token"),
        (f"postgres://app:{password}@db:5432/app", password, "url-credentials"),
        (f"curl -u deploy:{password} https://x", password, "curl-credentials"),
        (f"curl --user 'deploy:{password}' https://x", password, "curl-credentials"),
        (f"DB_PASSWORD={password}", password, "generic-secret"),
        (f'{{"api_key": "{password}"}}', password, "generic-secret"),
        (f"db_pass: '{password}'", password, "generic-secret"),
        (f"mysql --password {password} app", password, "generic-secret"),
    ]


@pytest.mark.parametrize(("text", "secret", "rule"), _positive_cases())
def test_each_rule_redacts_its_format(text: str, secret: str, rule: str) -> None:
    out, findings = redact_text(text)
    assert secret not in out
    assert f"[REDACTED:{rule}]" in out, out
    assert rule in {f.rule for f in findings}


def test_every_rule_has_a_positive_case() -> None:
    """Here or among its rule file's examples (tests/core/test_redact_rules.py runs those)."""
    from core.redaction.rules import build

    covered = {rule for _, _, rule in _positive_cases()}
    covered |= {rule for _, rule, _, _ in build.examples(build.load_families(), "positive")}
    assert set(rule_names()) - covered == set()


@pytest.mark.parametrize(
    "text",
    [
        "password = hunter2",
        "password: changeme",
        "PASSWORD=${DB_PASSWORD}",
        "token: <your token here>",
        "api_key = 'YOUR_API_KEY'",
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "Authorization: Bearer $TOKEN",
        "Authorization: Bearer <token>",
        "curl -u user:password https://x",
        "curl -u $USER:$PASS https://x",
        "git push -u origin main",
        "docker run -u 1000:1000 img",
        "https://user:password@example.com",
        "tests/test_token.py::test_token_refresh PASSED",
        "max_tokens=4096",
        "PWD=/home/agent/work/project",
        "secret_length = X25519.secret_length",
        "sequenceKey = 18",
        "public_key = 9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit",
        "-----BEGIN PUBLIC KEY-----",
        "if line.startswith('-----BEGIN RSA PRIVATE KEY-----'):",
        "commit 9a038989604e8da62ecddbe2094b16ce1b778be1",
        "Downloading https://files.pythonhosted.org/packages/ab/cd/requests-2.32.3-py3-none-any.whl",
        # source code echoed in diffs: templates, concatenations and calls are not values
        'f"> Authorization: Bearer {bearer}\\r\\n"',
        'b"token=" + ghp + b"\\n",',
        "password = _strip_quotes(text, colon + 1, end)",
        '"password=": lambda n: b"password=" * (n // 9),',
        """"curl -u": lambda n: b"-u 'a' " * (n // 7),""",
        "``Authorization: Bearer`` or ``password=`` is only context",
    ],
)
def test_look_alikes_and_placeholders_are_left_alone(text: str) -> None:
    assert redact_text(text) == (text, [])


@pytest.mark.parametrize(
    "token",
    [
        # found by the evidence stream test in CI: a random body holding "xxxx" was a mask
        "ghp_zw6dk3my2axxxxav68y4ycdw39krsx73fffz",
        "ghp_2mxxxxrnrudc2h9cme3bhkb8scbytupvf92h",
        "ghp_xxxx" + "k3my2a9v68y4ycdw39krsx73fffzp45h",
    ],
)
def test_a_random_token_body_holding_four_xs_is_still_a_token(token: str) -> None:
    assert redact_text(f"token {token} here") == (
        "token [REDACTED:github-token] here",
        [Finding("github-token", 6, 6 + len(token))],
    )


@pytest.mark.parametrize(
    "token",
    ["ghp_1234567890abcdef" + "x" * 20, "ghp_k3my2a9v68y4ycdw39krsx73" + "X" * 9],
)
def test_a_token_body_a_quarter_xs_is_a_mask(token: str) -> None:
    assert redact_text(token) == (token, [])


def test_only_the_secret_part_of_a_context_prefix_is_redacted() -> None:
    token = rand(40)
    out, _ = redact_text(f"Authorization: Bearer {token}\n")
    assert out == "Authorization: Bearer [REDACTED:authorization-header]\n"
    out, _ = redact_text(f'"password": "{token}",')
    assert out == '"password": "[REDACTED:generic-secret]",'
    out, _ = redact_text(f"https://ci:{token}@git.example.com/x")
    assert out == "https://ci:[REDACTED:url-credentials]@git.example.com/x"


def test_findings_point_at_the_original_text() -> None:
    ghp = "ghp_" + rand(36)
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI" + rand(20) + "In0." + rand(43)
    text = f"é first {ghp}\nthen ünïcode and {jwt} end"
    out, findings = redact_text(text)
    assert [text[f.start : f.end] for f in findings] == [ghp, jwt]
    assert [f.rule for f in findings] == ["github-token", "jwt"]
    assert out == "é first [REDACTED:github-token]\nthen ünïcode and [REDACTED:jwt] end"
    assert all(isinstance(f, Finding) for f in findings)


def test_redact_argv_sees_each_argument_in_context() -> None:
    pw = rand(12) + "!9"
    argv = ["curl", "-u", f"bob:{pw}", "--password", pw, "https://x", "-v"]
    assert redact_argv(argv) == [
        "curl",
        "-u",
        "bob:[REDACTED:curl-credentials]",
        "--password",
        "[REDACTED:generic-secret]",
        "https://x",
        "-v",
    ]
    assert redact_argv(["ls", "-la"]) == ["ls", "-la"]


def test_entropy() -> None:
    assert shannon_entropy("") == 0
    assert shannon_entropy("aaaa") == 0
    assert shannon_entropy("abcd") == pytest.approx(2.0)


def test_rules_are_keyword_gated_and_named() -> None:
    names = rule_names()
    assert len(names) == len(set(names))
    for rule in RULES:
        assert rule.keywords, rule.name
        assert all(kw == kw.lower() and kw for kw in rule.keywords), rule.name


# --- the gate finds every match the rules' regexes can make -------------------------------------


def brute_force_findings(text: str) -> list[tuple[str, int, int]]:
    """Every rule tried at every position (no gate), overlaps merged as the redactor merges them.

    Anchored rules are tried as the redactor tries them at their starts, joins across a line
    break included (core.redaction.scanning.try_anchored)."""
    from core.redaction.scanning import try_anchored

    raw: list[tuple[int, int, int]] = []
    for index, rule in enumerate(RULES):
        if rule.anchored:
            for i in range(len(text)):
                raw += try_anchored(text, index, i, len(text))
            continue
        for m in rule.pattern.finditer(text):
            raw += [(s, e, index) for s, e in rule.select(m)]
    raw.sort()
    merged: list[tuple[int, int, int]] = []
    for s, e, index in raw:
        if merged and s < merged[-1][1]:
            ps, pe, pindex = merged[-1]
            merged[-1] = (ps, max(pe, e), min(pindex, index))
        else:
            merged.append((s, e, index))
    return [(RULES[index].name, s, e) for s, e, index in merged]


def gated_findings(text: str) -> list[tuple[str, int, int]]:
    return [(f.rule, f.start, f.end) for f in redact_text(text)[1]]


def test_gate_misses_no_match_on_the_corpus() -> None:
    """The literal gate (keywords, starts) only skips places where no rule could match."""
    for row in load_corpus():
        text = row["text"]
        if "-----BEGIN" not in text:  # PEM blocks are the machine's, not one regex's
            assert gated_findings(text) == brute_force_findings(text), text


GATE_PIECES = [
    *[
        "password",
        "PassWord",
        "passwd",
        "pwd",
        "passphrase",
        "pass",
        "PASSED",
        "secret",
        "token",
        "auth",
        "AUTH",
    ],
    *[
        "credential",
        "credentials",
        "key",
        "api_key",
        "Authorization",
        "bearer",
        "Bearer",
        "-u",
        "--user",
    ],
    *[
        "-",
        "--",
        "_",
        ".",
        "1",
        "42",
        ":",
        "=",
        "=>",
        ":=",
        ",",
        "SECRET_ACCESS_KEY",
        "secret-access_key",
        "ghp_",
        "glpat-",
    ],
    *["AC", "SK", "sk-", "xoxb-", "://", "@"],
    *["\\", '"', "'", " ", "  ", "\t", "\n", "x" * 8],
    *[rand(12), rand(40), rand(32, "0123456789abcdef")],
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(picks=st.lists(st.integers(0, len(GATE_PIECES) - 1), max_size=30))
def test_gate_equals_trying_every_rule_everywhere(picks: list[int]) -> None:
    text = "".join(GATE_PIECES[i] for i in picks)
    assert gated_findings(text) == brute_force_findings(text)


def test_anchored_rules_start_with_one_of_their_starts() -> None:
    """Checks the declared starts against the corpus: every anchored match begins at one."""
    for row in load_corpus():
        text = row["text"]
        low = text.lower()
        for rule in RULES:
            if not rule.anchored:
                continue
            for i in range(len(text)):
                if rule.pattern.match(text, i) is not None:
                    assert any(
                        low.startswith(literal, i - offset) and i >= offset
                        for literal, offset in rule.starts
                    ), (rule.name, text[i : i + 40])


# --- multi-line PEM blocks -------------------------------------------------------------------


def pem_block(lines: int = 6, kind: str = "RSA PRIVATE KEY", eol: str = "\n") -> str:
    body = eol.join(rand(64, ALNUM + "+/") for _ in range(lines))
    return f"-----BEGIN {kind}-----{eol}{body}{eol}-----END {kind}-----{eol}"


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
@pytest.mark.parametrize(
    "kind", ["RSA PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY"]
)
def test_pem_block_spanning_lines_and_chunks_is_redacted_whole(kind: str, eol: str) -> None:
    key = pem_block(kind=kind, eol=eol)
    data = f"before{eol}{key}after{eol}".encode()
    expected = f"before{eol}[REDACTED:private-key]{eol}after{eol}".encode()
    assert redact_bytes(data) == expected
    for sizes in ([1], [3, 5], [64], [len(data) // 2]):
        assert stream(data, sizes)[0] == expected


def test_pem_block_indented_in_yaml_and_with_headers() -> None:
    body = "\n".join("    " + rand(64, ALNUM + "+/") for _ in range(4))
    text = (
        "tls:\n  key: |\n    -----BEGIN RSA PRIVATE KEY-----\n    Proc-Type: 4,ENCRYPTED\n"
        f"    DEK-Info: AES-128-CBC,{rand(32, '0123456789ABCDEF')}\n\n{body}\n"
        "    -----END RSA PRIVATE KEY-----\n  cert: x\n"
    )
    out, findings = redact_text(text)
    assert out == "tls:\n  key: |\n    [REDACTED:private-key]\n  cert: x\n"
    assert [f.rule for f in findings] == ["private-key"]


def test_pem_look_alikes_are_released() -> None:
    for text in (
        "-----BEGIN PRIVATE KEY-----\nanything\n-----END PRIVATE KEY-----\n",
        "-----BEGIN OPENSSH PRIVATE KEY----------END OPENSSH PRIVATE KEY-----",
        "-----BEGIN RSA PRIVATE KEY-----\nthis is prose, not a key\n",
        "match '-----BEGIN RSA PRIVATE KEY-----' at the start\nnext line\n",
    ):
        assert redact_text(text) == (text, []), text
        assert stream(text.encode(), [2])[0] == text.encode()


def test_pem_block_cut_short_is_redacted_as_truncated() -> None:
    body = "\n".join(rand(64, ALNUM + "+/") for _ in range(3))
    text = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n$ echo done\ndone\n"
    out, _ = redact_text(text)
    assert out == "[REDACTED:private-key]\n$ echo done\ndone\n"
    text_eof = f"-----BEGIN RSA PRIVATE KEY-----\n{body}"
    assert redact_text(text_eof)[0] == "[REDACTED:private-key]"


def test_pem_block_larger_than_the_hold_cap_is_redacted_without_holding_it() -> None:
    lines = PEM_HOLD_CAP // 65 * 40  # about forty times the cap
    key = pem_block(lines=lines)
    data = f"start\n{key}end\n".encode()
    redactor = StreamRedactor()
    out = []
    held = 0
    for i in range(0, len(data), 4096):
        out.append(redactor.feed(data[i : i + 4096]))
        held = max(held, redactor.held)
    out.append(redactor.flush())
    assert b"".join(out) == b"start\n[REDACTED:private-key]\nend\n"
    assert b"".join(out) == redact_bytes(data)
    assert held <= PEM_HOLD_CAP + 3 * 4096
    # and a key that never ends: dropped line by line, memory still bounded
    redactor = StreamRedactor()
    first = redactor.feed(b"-----BEGIN RSA PRIVATE KEY-----\n")
    body = (rand(64) + "\n").encode() * 1000
    held = 0
    for _ in range(40):  # 2.6 MB of key material
        first += redactor.feed(body)
        held = max(held, redactor.held)
    assert first + redactor.flush() == b"[REDACTED:private-key]\n"
    assert held <= PEM_HOLD_CAP + 2 * len(body)


# --- streaming equals whole ------------------------------------------------------------------


def _fragments() -> list[bytes]:
    ghp = ("ghp_" + rand(36)).encode()
    jwt = ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI" + rand(20) + "In0." + rand(43)).encode()
    return [
        b"plain output line\n",
        b"collected 3 items\r\n",
        b"  45% |#########           | eta 0:00:03\r",
        b"token=" + ghp + b"\n",
        ghp,
        b" Authorization: Bearer " + rand(32).encode() + b"\n",
        jwt,
        b"https://u:" + rand(12).encode() + b"@host/\n",
        b"curl -u bob:" + rand(12).encode() + b" x\n",
        b"export API_KEY=" + rand(30).encode() + b"\n",
        pem_block(3).encode(),
        pem_block(2, eol="\r\n").encode(),
        b"-----BEGIN PRIVATE KEY-----\nanything\n-----END PRIVATE KEY-----\n",
        b"-----BEGIN RSA PRIVATE KEY-----\n" + rand(64).encode() + b"\n",
        b"\xff\xfe\x00\x80 binary \xc3\x28 not utf-8",
        # issue 16: a token cut by a line feed, one with a colour code inside, a key pair
        b"export API_TOKEN=" + ghp[:17] + b"\n" + ghp[17:] + b"\n",
        b"\x1b[1m" + ghp[:9] + b"\x1b[0m" + ghp[9:] + b"\n",
        ("AKIA" + rand(16, string.ascii_uppercase) + "\n" + rand(40, ALNUM + "+/")).encode(),
        b"\n",
        b"\r",
        b"-----END RSA PRIVATE KEY-----\n",
        "naïve café ✓ ünïcode\n".encode(),
    ]


FRAGMENTS = _fragments()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.integers(0, len(FRAGMENTS) - 1), max_size=25),
    noise=st.binary(max_size=40),
    cuts=st.lists(st.integers(1, 97), min_size=1, max_size=12),
)
def test_any_chunking_equals_redact_bytes(picks: list[int], noise: bytes, cuts: list[int]) -> None:
    data = b"".join(FRAGMENTS[i] for i in picks) + noise
    assert stream(data, cuts)[0] == redact_bytes(data)


def test_a_token_after_a_keyed_token_line_and_before_a_coloured_one_streams_like_whole() -> None:
    """Found by hypothesis: `token=<token>`, then a line holding a token and a colour-split
    token. Whole, the key's value joins the next line seen through its colours; streamed, the
    first line was scanned alone, its join read the next line with the escapes in it and found
    nothing, so neither token of the second line was redacted."""
    data = FRAGMENTS[3] + FRAGMENTS[4] + FRAGMENTS[16]
    whole = redact_bytes(data)
    assert FRAGMENTS[4] not in whole and b"R2KDjUHqYi8EtO85" not in whole.split(b"\n")[1]
    for cuts in ([1], [len(FRAGMENTS[3])], [len(data)]):
        assert stream(data, cuts)[0] == whole


def test_a_key_ids_reach_survives_the_rescan_after_a_pem_block_it_ran_into() -> None:
    """Found by hypothesis: an AWS key id, its secret, then a PEM block on the secret's line
    that turns out truncated, and a bare secret key within the id's reach after the block.
    Whole, the region is scanned again after the block and the id's reach (inside the region)
    was forgotten, so the second secret survived; streamed, it was redacted."""
    data = b"".join(FRAGMENTS[i] for i in (17, 13, 14, 17, 16))
    whole = redact_bytes(data)
    assert whole.count(b"[REDACTED:aws-secret-access-key]") == 2
    for cuts in ([1], [7], [len(data)]):
        assert stream(data, cuts)[0] == whole


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=3000), cuts=st.lists(st.integers(1, 500), min_size=1, max_size=8))
def test_any_chunking_of_random_bytes_equals_redact_bytes(data: bytes, cuts: list[int]) -> None:
    assert stream(data, cuts)[0] == redact_bytes(data)


@settings(max_examples=40, deadline=None)
@given(split=st.integers(0, 10_000), pos=st.integers(0, 3 * MAX_LINE))
def test_lines_longer_than_the_window_are_chunking_independent(split: int, pos: int) -> None:
    """A secret anywhere in a line of 3×MAX_LINE (windowed) is redacted whatever the chunking."""
    ghp = ("ghp_" + rand(36)).encode()
    filler = b"x" * (3 * MAX_LINE)
    data = filler[:pos] + b" " + ghp + b" " + filler[pos:] + b"\n"
    whole = redact_bytes(data)
    assert ghp not in whole
    assert stream(data, [split + 1, 65536])[0] == whole


def test_secret_split_at_every_position_is_still_caught() -> None:
    secrets = [
        "ghp_" + rand(36),
        "Authorization: Bearer " + rand(30),
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI" + rand(20) + "In0." + rand(43),
        "xoxb-" + rand(12, string.digits) + "-" + rand(12, string.digits) + "-" + rand(24),
    ]
    for secret in secrets:
        data = f"log: {secret} done\n".encode()
        expected = redact_bytes(data)
        assert secret.encode()[-20:] not in expected
        for cut in range(1, len(data)):
            redactor = StreamRedactor()
            got = redactor.feed(data[:cut]) + redactor.feed(data[cut:]) + redactor.flush()
            assert got == expected, cut


# --- passthrough -----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=5000))
def test_bytes_round_trip_exactly_where_nothing_is_redacted(data: bytes) -> None:
    out = redact_bytes(data)
    if not redact_text(data.decode("latin-1"))[1]:
        assert out == data


def test_binary_and_progress_bars_pass_through() -> None:
    rng = random.Random(7)
    binary = bytes(rng.randrange(256) for _ in range(200_000))
    assert redact_bytes(binary) == binary
    assert stream(binary, [4096, 1, 333])[0] == binary
    bar = b"".join(f"\rDownloading {i:3d}% |{'#' * (i // 5):<20}|".encode() for i in range(101))
    assert redact_bytes(bar) == bar
    latin1 = "café 100%\r\nnaïve façade\n".encode("latin-1")
    assert redact_bytes(latin1) == latin1
    ghp = ("ghp_" + rand(36)).encode()
    mixed = b"\xff\xfe" + ghp + b"\x00\x81\r\n"
    assert redact_bytes(mixed) == b"\xff\xfe[REDACTED:github-token]\x00\x81\r\n"


def test_memory_stays_bounded_on_an_endless_line() -> None:
    redactor = StreamRedactor()
    chunk = b"abcdefghij" * 6553
    held = 0
    for _ in range(80):  # ~5 MB without a line end
        redactor.feed(chunk)
        held = max(held, redactor.held)
    redactor.flush()
    assert held <= 2 * MAX_LINE + 2 * len(chunk)


def test_feed_after_flush_is_refused() -> None:
    redactor = StreamRedactor()
    redactor.flush()
    with pytest.raises(ValueError):
        redactor.feed(b"x")


# --- hostile input: linear time --------------------------------------------------------------

HOSTILE: dict[str, Callable[[int], bytes]] = {
    "a": lambda n: b"a" * n,
    "equals": lambda n: b"=" * n,
    "eyJ": lambda n: b"eyJ" * (n // 3),
    "eyJ-segments": lambda n: b"eyJabcdefgh." * (n // 12),
    "base64 line": lambda n: b"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkw+/" * (n // 46),
    "base64 lines": lambda n: b"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkw+/\n" * (n // 47),
    "password=": lambda n: b"password=" * (n // 9),
    "--token": lambda n: b"--token " * (n // 8),
    "BEGIN markers": lambda n: b"-----BEGIN RSA PRIVATE KEY-----" * (n // 31),
    "BEGIN lines": lambda n: b"-----BEGIN RSA PRIVATE KEY-----\n" * (n // 32),
    "endless key": lambda n: (
        b"-----BEGIN RSA PRIVATE KEY-----\n" + b"QUJD" * 16 * (n // 65) + b"\n"
    ),
    "xoxb": lambda n: b"xoxb-123456789012-" * (n // 18),
    "url": lambda n: b"http://u:" * (n // 9),
    "at signs": lambda n: b"://" + b"@" * n,
    "curl -u": lambda n: b"-u 'a' " * (n // 7),
    "Authorization": lambda n: b"Authorization: " * (n // 15),
    "quote": lambda n: b'password: "' + b"a" * n,
    "ghp_": lambda n: b"ghp_" * (n // 4),
}


def _cpu(data: bytes) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.process_time()
        redact_bytes(data)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input_is_linear(name: str) -> None:
    """8× the input must cost well under 64× (quadratic) the CPU time: the ratio stays < 30.

    The sizes straddle MAX_LINE so that work repeated per window would show as well.
    """
    make = HOSTILE[name]
    n = 64 * 1024
    small, large = _cpu(make(n)), _cpu(make(8 * n))
    ratio = large / max(small, 0.002)  # below ~2 ms the clock is too coarse to divide by
    print(f"\n{name}: {small * 1000:.1f} ms → {large * 1000:.1f} ms (×{ratio:.1f})")
    assert ratio < 30
