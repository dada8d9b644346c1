"""Agent sessions kept across loop revisits (``sessionScope: node_instance``).

A harness instance belongs to one controller, so this pool lives exactly as long as the
controller does. Loop iterations revisit a node as new node instances that differ only in
their visit number (``review[0]#1``, ``review[0]#2``), so sessions are keyed by the
occurrence: the node instance without its ``#visit``. A session is kept only after a
clean turn; an error of any kind drops it, and ``execution`` scope never keeps one.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from zeroshot_kernel.harness.base import ExecutionRequest
from zeroshot_kernel.harness.plan import AgentBinding

S = TypeVar("S")


def occurrence_key(node_instance: str) -> str:
    """``review[0]#3`` -> ``review[0]``: the same for every visit of one occurrence."""
    head, sep, _ = node_instance.rpartition("#")
    return head if sep else node_instance


def continues_sessions(request: ExecutionRequest) -> bool:
    return isinstance(request.binding, AgentBinding) and (
        request.binding.session_scope == "node_instance"
    )


class SessionPool(Generic[S]):
    """Sessions by occurrence, for bindings with ``sessionScope: node_instance``."""

    def __init__(self) -> None:
        self._sessions: dict[str, S] = {}

    def take(self, request: ExecutionRequest) -> S | None:
        """The session to continue, removed from the pool while the execution runs (an
        execution that is cancelled or fails thus leaves nothing behind)."""
        if not continues_sessions(request):
            return None
        return self._sessions.pop(occurrence_key(request.node_instance), None)

    def keep(self, request: ExecutionRequest, session: S | None) -> None:
        """Keep ``session`` after a clean turn (no-op for ``execution`` scope)."""
        if session is not None and continues_sessions(request):
            self._sessions[occurrence_key(request.node_instance)] = session

    def clear(self) -> None:
        self._sessions.clear()
