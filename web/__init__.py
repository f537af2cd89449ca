"""The web inbox behind `pitstop serve`: approvals and side effects, decided from a phone.

A small Starlette application, rendered on the server so it works without JavaScript (a few
lines of it add live updates), over the same `core.engine` API as the CLI and the dashboard.
Nothing is shown or accepted without a paired device (`web.guard`); `core` never imports it.
"""
