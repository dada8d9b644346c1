"""JSON the browser can parse: no NaN or infinity (``JSON.parse`` refuses them), no
types ``json`` cannot write."""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any


def clean(value: Any) -> Any:
    """``value`` with non-finite numbers as ``null``, datetimes as ISO 8601 text and any
    other unknown object as its text."""
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): clean(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [clean(item) for item in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def dumps(value: Any) -> str:
    return json.dumps(clean(value), allow_nan=False, ensure_ascii=False)


def number(value: Any) -> float | None:
    """A finite float, else None (recorded metrics may be anything JSON held)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None
