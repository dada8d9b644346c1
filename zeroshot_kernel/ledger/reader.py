"""What reading one run needs, whether from a :class:`~zeroshot_kernel.ledger.Ledger` or
from a :class:`~zeroshot_kernel.client.Client` (views, widgets and reports take either)."""

from __future__ import annotations

from typing import Any, Protocol

from zeroshot_kernel.ledger.events import RunEvent
from zeroshot_kernel.ledger.state import RunSnapshot


class RunReader(Protocol):
    """Reads runs by id: the snapshot, the snapshot with the events after a cursor, and
    the admitted submission."""

    def snapshot(self, run_id: str) -> RunSnapshot: ...

    def snapshot_and_tail(
        self,
        run_id: str,
        after: str | None = None,
        *,
        limit: int | None = None,
        kinds: set[str] | None = None,
    ) -> tuple[RunSnapshot, list[tuple[str, RunEvent]]]: ...

    def admitted(self, run_id: str) -> dict[str, Any]: ...
