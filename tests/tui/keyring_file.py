"""A keyring backend for CLI tests: a stand-in for a real OS keyring, kept in a JSON file.

`pitstop` runs as a real process in the CLI tests, so an in-memory keyring cannot be handed to
it; `PYTHON_KEYRING_BACKEND=keyring_file.JsonFileKeyring` with `TEST_KEYRING_FILE` set selects
this one. It stands in for Secret Service or Keychain, never for any part of Pitstop.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import keyring.backend


class JsonFileKeyring(keyring.backend.KeyringBackend):
    """Secrets in the JSON file named by `TEST_KEYRING_FILE`."""

    priority = 1  # type: ignore[assignment]

    @property
    def _path(self) -> Path:
        return Path(os.environ["TEST_KEYRING_FILE"])

    def _load(self) -> dict[str, str]:
        if not self._path.exists():
            return {}
        loaded: dict[str, str] = json.loads(self._path.read_text())
        return loaded

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(f"{service}/{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        saved = self._load()
        saved[f"{service}/{username}"] = password
        self._path.write_text(json.dumps(saved))

    def delete_password(self, service: str, username: str) -> None:
        saved = self._load()
        saved.pop(f"{service}/{username}", None)
        self._path.write_text(json.dumps(saved))
