"""Run cursors: opaque ``v2:<seq>`` strings, one per event position.

``v2:0`` is before the first event; every appended event moves the run's cursor by one.
Clients store cursors and hand them back; only the ledger reads the number inside.
"""

from __future__ import annotations

import re
from functools import lru_cache

from zeroshot_kernel.ledger.errors import InvalidCursor

CURSOR_PREFIX = "v2:"
INITIAL_CURSOR = "v2:0"
MAX_SEQUENCE = 2**63 - 1
"""The largest sequence a BIGINT column holds."""

_CURSOR = re.compile(r"v2:(0|[1-9][0-9]{0,18})")


def format_cursor(sequence: int) -> str:
    """The cursor of the event at ``sequence`` (0 = before any event)."""
    if not 0 <= sequence <= MAX_SEQUENCE:
        raise InvalidCursor(sequence)
    return f"{CURSOR_PREFIX}{sequence}"


def parse_cursor(cursor: object) -> int:
    """The sequence inside a cursor; anything but the exact canonical form is rejected."""
    if not isinstance(cursor, str):
        raise InvalidCursor(cursor)
    return _parse(cursor)


@lru_cache(maxsize=1 << 16)
def _parse(cursor: str) -> int:
    """Memoised: every reduction re-reads the cursors of the whole history."""
    match = _CURSOR.fullmatch(cursor)
    if match is None or int(match.group(1)) > MAX_SEQUENCE:
        raise InvalidCursor(cursor)
    return int(match.group(1))
