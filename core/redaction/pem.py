"""PEM private keys across lines: a BEGIN line holds the text back until the block is decided.

No rule's regex crosses a line end, so a key printed over many lines is the machine's own
concern. A ``-----BEGIN … PRIVATE KEY-----`` line starts a held block that ends at
``-----END … PRIVATE KEY-----`` (redacted whole), at the first line that cannot be part of a key
(redacted as a truncated key when it already held key material, else released untouched to the
ordinary rules), or at :data:`PEM_HOLD_CAP` held characters (redacted at once; the key lines that
follow are dropped up to the END line). Each decision depends only on the text, never on where
chunks were split.
"""

from __future__ import annotations

import re

from core.redaction.buffer import PemBlock, RedactionBuffer, Spans, find_terminator
from core.redaction.checks import lazy_pattern
from core.redaction.pairs import remember_key_ids
from core.redaction.rules import PEM_MIN_BODY, PEM_MIN_TRUNCATED
from core.redaction.ruleset import PEM_RULE

PEM_LINE_MAX = 4096
"""A line inside a PEM block longer than this cannot be key material."""
PEM_HOLD_CAP = 64 * 1024
"""Most characters of a PEM block held back before it is redacted without waiting for its END."""

PEM_BEGIN = lazy_pattern(r"-----BEGIN[ A-Z0-9]{0,32}PRIVATE KEY(?: BLOCK)?-----", re.ASCII)
_PEM_END = lazy_pattern(r"-----END[ A-Z0-9]{0,32}PRIVATE KEY(?: BLOCK)?-----", re.ASCII)
_PEM_BODY = lazy_pattern(
    r"[ \t#/>*'\"+]{0,16}"
    r"(?:(?P<b64>[A-Za-z0-9+/=]{1,1024})|[A-Za-z][A-Za-z-]{1,40}:[^\r\n]{0,256})?"
    r"(?:\\n|\\r|[ \t'\",;+\\]){0,16}"
    r"[\r\n]{0,2}",
    re.ASCII,
)
"""One line a key may have: base64 or a header (``Proc-Type: …``), quoted, commented, escaped."""


class PemReader(RedactionBuffer):
    """The machine's handling of PEM blocks: find a BEGIN marker, classify the held lines."""

    __slots__ = ()

    def pem_marker(self, start: int, end: int, spans: Spans) -> int:
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
        for m in PEM_BEGIN().finditer(buf, lo, end):
            b = m.start()
            if not any(s <= b < e for s, e, _ in spans):
                return b
        return -1

    def pem_step(self, final: bool) -> bool:
        """Classify the next line of a held PEM block; False when more data is needed."""
        pem = self.pem
        assert pem is not None
        if pem.scan == pem.begin:  # the BEGIN line: classify what follows the marker
            m = PEM_BEGIN().match(self.buf, pem.scan)
            assert m is not None
            pem.scan = m.end()
        q = pem.scan
        line_end = self._pem_line_end(q, final)
        if line_end is None:
            return False
        if line_end < 0:
            self._pem_abort()
            return True
        end = _PEM_END().search(self.buf, q, line_end)
        if end is not None:
            before = _PEM_BODY().fullmatch(self.buf, q, end.start())
            if before is not None:
                self._pem_close(end.end(), pem.body + len(before.group("b64") or ""))
                return True
        m = _PEM_BODY().fullmatch(self.buf, q, line_end)
        if m is None:
            self._pem_abort()
            return True
        self._pem_key_line(pem, q, line_end, m.group("b64"), final)
        return True

    def _pem_line_end(self, q: int, final: bool) -> int | None:
        """End of the block's line at ``q`` (after its terminator); None: more data is needed;
        -1: the line is too long to be key material, or there is none."""
        buf = self.buf
        n = len(buf)
        t = find_terminator(buf, q, min(n, q + PEM_LINE_MAX))
        if t < 0:
            if n - q < PEM_LINE_MAX and not final:
                return None
            if n - q >= PEM_LINE_MAX or q >= n:
                return -1
            return n  # the last line of the input, without a terminator
        line_end = t + 1
        # take "\r\n" as one terminator so blank-line checks see whole lines
        if buf[t] == "\r" and line_end < n and buf[line_end] == "\n":
            line_end += 1
        elif buf[t] == "\r" and line_end == n and not final:
            return None
        return line_end

    def _pem_key_line(
        self, pem: PemBlock, q: int, line_end: int, b64: str | None, final: bool
    ) -> None:
        """A line of key material (or a header) at buf[q:line_end]: hold it, or drop it."""
        buf = self.buf
        content_end = line_end
        while content_end > q and buf[content_end - 1] in "\r\n":
            content_end -= 1
        if b64:
            pem.body += len(b64)
        pem.scan = line_end
        if pem.swallowing:
            if b64:
                self.extend_last(content_end)
                self.pos = content_end
        else:
            if b64:
                pem.last = content_end
            if line_end - pem.begin > PEM_HOLD_CAP:
                if pem.body < PEM_MIN_TRUNCATED or pem.last <= pem.begin:
                    self._pem_abort()  # no key material worth the name: release
                    return
                self.out.append(f"[REDACTED:{PEM_RULE}]")
                self.record(PEM_RULE, pem.begin, pem.last)
                remember_key_ids(self, pem.begin, pem.last)
                self.pos = pem.last
                pem.swallowing = True
        if line_end >= len(buf) and final:
            self._pem_abort()

    def _pem_close(self, end: int, body: int) -> None:
        """An END marker closes the block at ``end``."""
        pem = self.pem
        assert pem is not None
        self.pem = None
        if pem.swallowing:
            self.extend_last(end)
            self.pos = end
            self.cache = None
        elif body >= PEM_MIN_BODY:
            self.out.append(f"[REDACTED:{PEM_RULE}]")
            self.record(PEM_RULE, pem.begin, end)
            remember_key_ids(self, pem.begin, end)
            self.pos = end
            self.cache = None
        else:
            self.skip = pem.begin + 1  # not a key: release the lines to the ordinary rules
        self.no_terminator_before = self.pos

    def _pem_abort(self) -> None:
        """A line that cannot be key material (or the end of input) ends the block."""
        pem = self.pem
        assert pem is not None
        self.pem = None
        if pem.swallowing:
            self.cache = None  # pos already sits after the last dropped key line
        elif pem.body >= PEM_MIN_TRUNCATED and pem.last > pem.begin:
            self.out.append(f"[REDACTED:{PEM_RULE}]")
            self.record(PEM_RULE, pem.begin, pem.last)
            remember_key_ids(self, pem.begin, pem.last)
            self.pos = pem.last
            self.cache = None
        else:
            self.skip = pem.begin + 1
        self.no_terminator_before = self.pos
