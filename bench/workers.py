"""The benchmarks' workers: importable, so admission and the python harness resolve them."""

from __future__ import annotations

from typing import Any


async def noop(value: Any) -> None:
    """A step that does nothing: what is measured is the engine around it."""
    return None
