"""HTML from templates, with every agent-written string made harmless twice over.

Autoescaping turns `<script>` into text; `finalize` also replaces terminal control characters
(an escape sequence in a command's output, a carriage return that hides a line) with visible
stand-ins, so nothing an agent wrote can style, hide or run anything on the page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse

from core import clock

_TEMPLATES = Path(__file__).parent / "templates"
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """Control characters (but newline and tab) as their Unicode control pictures."""
    return _CONTROLS.sub(
        lambda m: chr(0x2400 + ord(m.group())) if ord(m.group()) < 32 else "␡", text
    )


def _finalize(value: Any) -> Any:
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return "" if value is None else value


def _age(text: str | None) -> str:
    return clock.humanize_age(text) if text else "-"


def time_left(expires_at: str | None) -> str:
    """How long until a request expires, in words (the page's script keeps it counting)."""
    if not expires_at:
        return ""
    seconds = int((clock.parse(expires_at) - clock.now()).total_seconds())
    if seconds <= 0:
        return "expired"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds:02d} s left" if minutes else f"{seconds} s left"


_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(_TEMPLATES),
    autoescape=True,
    finalize=_finalize,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters["age"] = _age
_ENV.filters["time_left"] = time_left


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Render a template as a full response."""
    html = _ENV.get_template(template).render(request=request, **context)
    return HTMLResponse(html, status_code=status)
