"""The cancelled task (`signed-cookie-sessions`): a rewrite the reviewers rejected.

It also shows that a `.env` file in the work tree is left out of the snapshot.
"""

from __future__ import annotations

from pathlib import Path

from core.demo.context import Demo, as_of
from core.demo.names import SIGNED_COOKIES
from core.demo.repos import replace_passage, write_file
from core.engine import CheckpointRequest
from core.models import Budget, CheckpointReason, NamedVersion, TaskStatus


def build(demo: Demo) -> None:
    """Cancelled: a rewrite the reviewers rejected; a `.env` file is left out of the snapshot."""
    repo = demo.start(
        SIGNED_COOKIES,
        demo.shopfront,
        "agent/signed-cookies",
        50,
        objective="Replace JWT bearer tokens with signed, HTTP-only session cookies",
        harness=NamedVersion("gemini-cli", "0.9.0"),
        model=NamedVersion("gemini-2.5-pro"),
        budget=Budget(tokens=1_000_000, usd=10.0, minutes=180),
        credentials=("SHOPFRONT_DEPLOY_TOKEN",),
    )
    _swap_the_serializer(demo, repo)
    _set_the_cookie_and_cancel(demo, repo)


def _swap_the_serializer(demo: Demo, repo: Path) -> None:
    """JWTs swapped for a signed-cookie serializer, a `.env` secret left beside them."""
    replace_passage(
        repo,
        "src/shopfront/auth.py",
        '"""Sessions as signed JWTs."""\n\n'
        "import os\nimport time\n\nimport jwt\nfrom flask import abort\n",
        '"""Sessions as signed, HTTP-only cookies."""\n\nimport os\n\n'
        "from flask import abort\nfrom itsdangerous import BadSignature, URLSafeTimedSerializer\n",
    )
    replace_passage(
        repo,
        "src/shopfront/auth.py",
        "def issue_token(email: str) -> str:\n"
        "    now = int(time.time())\n"
        '    return jwt.encode({"sub": email, "iat": now, "exp": now + TTL_SECONDS}, '
        'SECRET, "HS256")\n',
        '_serializer = URLSafeTimedSerializer(SECRET, salt="session")\n\n\n'
        "def issue_token(email: str) -> str:\n"
        '    return _serializer.dumps({"sub": email})\n',
    )
    write_file(
        repo,
        ".env",
        "SHOPFRONT_SECRET=9f1c2e7a4b6d8e0f1a3c5e7b9d1f3a5c\nSESSION_COOKIE_SECURE=1\n",
    )
    demo.checkpoint(
        SIGNED_COOKIES,
        49,
        CheckpointRequest(
            reason=CheckpointReason.MILESTONE,
            note="Cookie serializer in place; routes still read the Authorization header",
            done=("Survey current JWT flow", "Swap jwt for itsdangerous serializer"),
            todo=("Set the cookie in /login", "Read the cookie in current_user", "Update tests"),
            tokens_used=212_000,
            usd_used=1.85,
        ),
    )


def _set_the_cookie_and_cancel(demo: Demo, repo: Path) -> None:
    """The cookie set at /login, a checkpoint before review, then the rejection."""
    replace_passage(
        repo,
        "src/shopfront/app.py",
        '    token = auth.issue_token(request.json["email"])\n'
        '    return jsonify({"token": token})\n',
        '    response = jsonify({"ok": True})\n'
        '    response.set_cookie("session", auth.issue_token(request.json["email"]),\n'
        '                        httponly=True, secure=True, samesite="Lax")\n'
        "    return response\n",
    )
    demo.checkpoint(
        SIGNED_COOKIES,
        47,
        CheckpointRequest(
            reason=CheckpointReason.MANUAL,
            note="Checkpoint before review: mobile clients still send bearer tokens",
            done=("Set the cookie in /login",),
            tokens_used=388_000,
            usd_used=3.4,
        ),
    )
    with as_of(demo.ago(46)):
        demo.engine.finish_task(
            SIGNED_COOKIES,
            TaskStatus.CANCELLED,
            "Rejected in review: the mobile app needs bearer tokens; rotate JWT keys instead",
        )
