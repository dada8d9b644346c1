"""Making worker output safe to record: secrets removed, control characters visible,
lines bounded. Every ``safe_log`` line passes through here before the ledger."""

from __future__ import annotations

import re
from collections.abc import Iterable

from zeroshot_kernel.ledger.events import MAX_LOG_LINE_BYTES

REDACTED = "<redacted>"
OVERSIZED = "<redacted: message exceeded bounds>"
_MIN_SECRET_LENGTH = 4
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


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
