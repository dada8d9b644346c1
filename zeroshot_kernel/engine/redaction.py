"""Making worker output safe to record: secrets removed, control characters visible,
lines bounded. Every ``safe_log`` line passes through here before the ledger."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from zeroshot_kernel.ledger.events import MAX_LOG_LINE_BYTES

REDACTED = "<redacted>"
OVERSIZED = "<redacted: message exceeded bounds>"
_MIN_SECRET_LENGTH = 4
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL|AUTH", re.IGNORECASE)
"""Environment variable names whose values are taken for secrets, declared or not."""
_MIN_GUESSED_LENGTH = 8
"""A guessed secret (by its variable's name) shorter than this is more likely a flag."""
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/@]*@")


def environment_secrets(environ: Mapping[str, str]) -> list[str]:
    """Values of ``environ`` that look like secrets: those of variables named like one
    (``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*KEY*``, ...) and the password of any
    URL that carries one (a ledger's ``postgresql://user:password@host``)."""
    found = [
        value
        for name, value in environ.items()
        if SECRET_NAME.search(name) and len(value) >= _MIN_GUESSED_LENGTH
    ]
    for value in environ.values():
        for match in _URL_PASSWORD.finditer(value):
            try:
                password = urlsplit(value[match.start() : match.end() + 1]).password
            except ValueError:
                continue
            if password:
                found.append(password)
    return found


class Redactor:
    """Replaces every occurrence of any secret value with ``<redacted>``.

    Values shorter than four characters are not treated as secrets (redacting ``1`` or
    ``ab`` would shred ordinary text while protecting nothing).
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted({s for s in secrets if len(s) >= _MIN_SECRET_LENGTH}, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, values))) if values else None

    def redact(self, text: str) -> str:
        return self._pattern.sub(REDACTED, text) if self._pattern else text

    def safe_line(self, line: str) -> str:
        """A recordable log line: redacted, control characters escaped, bounded."""
        visible = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", self.redact(line))
        if len(visible.encode("utf-8")) > MAX_LOG_LINE_BYTES:
            return OVERSIZED
        return visible
