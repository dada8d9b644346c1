"""Seeds derived from named parts, so every random choice is reproducible and independent."""

from __future__ import annotations

import hashlib


def derive_seed(*parts: object) -> int:
    """A 31-bit seed from ``parts`` (stable across processes, unlike ``hash``)."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
