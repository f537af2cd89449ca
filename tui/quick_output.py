"""How the click-free paths (`tui.quick`, `tui.quick_checkpoint`, `tui.quick_diffval`) print,
so that they print the bytes `click.echo` would and their parity tests hold."""

from __future__ import annotations

import sys


def writes_utf8() -> bool:
    """Whether stdout takes any text as it is (click rewraps a stream in another encoding)."""
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("_", "-")
    return encoding in ("utf-8", "utf8")


def write(text: str | None, error: str | None, code: int) -> int:
    """Print as `click.echo` does (the text, a newline, flushed), stdout first; return `code`."""
    for stream, line in ((sys.stdout, text), (sys.stderr, error)):
        if line is not None:
            stream.write(line + "\n")
            stream.flush()
    return code
