"""The demo's long build log: evidence big enough that the viewer must scroll it lazily.

Generated rather than stored, deterministically, so the repository carries no 4.5 MB fixture.
"""

from __future__ import annotations

from pathlib import Path

BUILD_LOG_LINES = 60_000  # about 4.5 MB: the evidence viewer must scroll it without loading it


def write_build_log(path: Path, lines: int = BUILD_LOG_LINES) -> None:
    """A long, deterministic build log: compile steps, a few warnings, then success."""
    modules = ("app", "cart", "pricing", "auth", "ratelimit", "catalogue", "orders", "vat")
    with path.open("w", encoding="utf-8") as log:
        log.write("$ uv build --wheel && uv run pytest -q\nResolved 14 packages in 212ms\n")
        for step in range(1, lines + 1):
            module = modules[step % len(modules)]
            elapsed = step * 0.0052
            if step % 9973 == 0:
                log.write(
                    f"[{elapsed:9.3f}s] warning: shopfront/{module}.py:{step % 400 + 1}: "
                    "datetime.utcnow() is deprecated; use datetime.now(UTC)\n"
                )
            log.write(
                f"[{elapsed:9.3f}s] [{step:>6}/{lines}] compiling shopfront/{module}.py "
                f"chunk {step:06x} -> build/lib/shopfront/{module}.cpython-312.pyc ok\n"
            )
        log.write("Successfully built dist/shopfront-0.4.2-py3-none-any.whl\n14 passed in 0.48s\n")
