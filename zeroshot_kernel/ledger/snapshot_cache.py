"""The latest snapshot of recently used runs, kept by one ``Ledger`` object.

Events are never changed once written and a snapshot is a pure fold of them, so a snapshot
known at sequence ``s`` stays exactly right at ``s`` forever: a reader whose run has not
moved reuses it, and one whose run moved folds in only the newer events. Snapshots are
immutable and shared between callers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from zeroshot_kernel.ledger.cursor import parse_cursor
from zeroshot_kernel.ledger.state import RunSnapshot

MAX_CACHED_RUNS = 64


class SnapshotCache:
    """A small thread-safe LRU of snapshots by run id; never moves a run backwards."""

    def __init__(self, size: int = MAX_CACHED_RUNS) -> None:
        self._size = size
        self._snapshots: OrderedDict[str, tuple[int, RunSnapshot]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, run_id: str) -> tuple[int, RunSnapshot] | None:
        """The cached (sequence, snapshot) of ``run_id``, if any."""
        with self._lock:
            found = self._snapshots.get(run_id)
            if found is not None:
                self._snapshots.move_to_end(run_id)
            return found

    def put(self, snapshot: RunSnapshot) -> None:
        sequence = parse_cursor(snapshot.cursor)
        with self._lock:
            known = self._snapshots.get(snapshot.run_id)
            if known is not None and known[0] > sequence:
                return
            self._snapshots[snapshot.run_id] = (sequence, snapshot)
            self._snapshots.move_to_end(snapshot.run_id)
            while len(self._snapshots) > self._size:
                self._snapshots.popitem(last=False)
