"""A failed run explains itself: the failing node, its error code, the harness's detail and
the worker's own last error lines, read from the ledger alone (real runs, real workers)."""

from __future__ import annotations

import engine_graphs as g
import pytest
from engine_support import Workspace, finish

from zeroshot_kernel.client import Run
from zeroshot_kernel.ledger.failure import FailureCause, explain_failure

# slow: detached controllers and worker processes
pytestmark = pytest.mark.slow


def _cause(run: Run) -> FailureCause | None:
    return explain_failure(event for _, event in run.events())


def test_a_crash_names_its_node_code_and_the_workers_own_error(ws: Workspace) -> None:
    run = ws.submit(g.guarded_graph("crash", attempts=1), {"value": 1})
    finish(run)
    cause = _cause(run)
    assert cause is not None
    assert (cause.reason, cause.node, cause.code) == ("crash", "work", "crash")
    assert "this worker always crashes" in " ".join([cause.detail or "", *cause.error_lines])
    assert cause.summary().startswith("failed: crash (node work: crash - ")
    assert cause.to_wire()["errorLines"] == cause.error_lines
    assert "engine_workers.py:" in (cause.detail or "")  # the line where the bug is


def test_a_crash_with_the_projects_own_error_says_its_message_and_no_source_line(
    ws: Workspace,
) -> None:
    run = ws.submit(g.guarded_graph("fail_plainly", attempts=1), {"value": 1})
    finish(run)
    cause = _cause(run)
    assert cause is not None
    assert cause.detail == "OperationFailed: the value cannot be used here"


def test_a_crash_repaired_by_a_retry_is_no_cause(ws: Workspace) -> None:
    ws.behave(work={"crash_until": 2})
    run = ws.submit(g.guarded_graph("inc", attempts=2), {"value": 1})
    assert finish(run).status == "succeeded"
    assert _cause(run) is None


def test_a_refusal_keeps_its_reason(ws: Workspace) -> None:
    run = ws.submit(g.guarded_graph("refuse", attempts=1), {"value": 1})
    finish(run)
    cause = _cause(run)
    assert cause is not None
    assert (cause.code, cause.error_reason) == ("refusal", "policy_denied")
    assert cause.summary() == (
        "failed: refusal (node work: refusal [policy_denied] - not allowed to touch this)"
    )
