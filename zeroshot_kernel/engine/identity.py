"""Deterministic identities, so that replaying a history reproduces every id it recorded.

Every reduction recomputes the ids of the occurrences it walks, so they are memoised."""

from __future__ import annotations

import hashlib
from functools import lru_cache

_EXECUTION_DOMAIN = b"zeroshot/native-v2/execution-ref/v1\0"


@lru_cache(maxsize=1 << 16, typed=True)
def node_instance_id(node: str, map_indices: tuple[int, ...], visit: int) -> str:
    """One occurrence of ``node``: its map item indices and which visit it is (loop
    iterations revisit a node). Readable, e.g. ``review[0][2]#3``; node names cannot contain
    ``[`` or ``#``, so distinct occurrences never collide."""
    scope = "".join(f"[{index}]" for index in map_indices)
    return f"{node}{scope}#{visit}"


@lru_cache(maxsize=1 << 16, typed=True)
def execution_id(run_id: str, node: str, node_instance: str, attempt: int) -> str:
    """The contract's execution-id hash, with the attempt as the per-instance dispatch
    counter: every retry is a new execution of the same instance."""
    fields = "\0".join((run_id, node, node_instance, str(attempt))).encode()
    return "nv2-" + hashlib.sha256(_EXECUTION_DOMAIN + fields).hexdigest()
