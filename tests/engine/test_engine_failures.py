"""Worker failures end to end: malformed replies, timeouts (the worker process is really
killed), crashes, refusals, and which of them earn another attempt."""

from __future__ import annotations

import engine_graphs as g
import pytest
from engine_support import Workspace, assert_trace, finish, trace, wire
from support import alive, wait_until

from zeroshot_kernel.client import Run
from zeroshot_kernel.ledger.events import NodeCompleted

# slow: a detached controller and worker processes per test
pytestmark = pytest.mark.slow


def _completions(run: Run) -> list[NodeCompleted]:
    return [event for _, event in run.events() if isinstance(event, NodeCompleted)]


def _attempts(outcomes: list[str], terminal: str) -> list[str]:
    chain = ["run_started"]
    for number, outcome in enumerate(outcomes, start=1):
        suffix = "" if number == 1 else f" ({number})"
        chain += [f"started work#1{suffix}", f"completed work#1{suffix} {outcome}"]
    return [*chain, f"terminal {terminal}"]


def test_malformed_output_is_routed_and_not_retried(ws: Workspace) -> None:
    run = ws.submit(g.guarded_graph("wrong_type", attempts=3), {"value": 1})
    assert wire(finish(run)) == {"status": "failed", "reason": "malformed"}
    assert_trace(trace(run), _attempts(["malformed"], "failed/malformed"))
    [completed] = _completions(run)
    assert completed.completion.outcome.reason == "malformed_result"
    assert completed.detail is not None and "declared output" in completed.detail


def test_refusal_is_routed_and_not_retried(ws: Workspace) -> None:
    run = ws.submit(g.guarded_graph("refuse", attempts=3), {"value": 1})
    assert wire(finish(run)) == {"status": "failed", "reason": "refusal"}
    assert_trace(trace(run), _attempts(["refusal"], "failed/refusal"))
    [completed] = _completions(run)
    assert completed.completion.outcome.reason == "policy_denied"
    assert completed.detail == "not allowed to touch this"


def test_crash_twice_then_succeed_within_three_attempts(ws: Workspace) -> None:
    ws.behave(work={"crash_until": 3})
    run = ws.submit(g.guarded_graph("inc", attempts=3), {"value": 1})
    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 2}}
    assert_trace(trace(run), _attempts(["crash", "crash", "ok"], "succeeded"))
    completions = _completions(run)
    assert "scripted crash on attempt 1" in (completions[0].detail or "")
    # Three executions (one id per attempt); only the last one got to its side effect.
    executions = [c.completion.reference.execution for c in completions]
    assert len(set(executions)) == 3
    assert [e["execution"] for e in ws.effects()] == executions[2:]


def test_a_dying_worker_process_is_a_crash_retried_until_attempts_are_spent(
    ws: Workspace,
) -> None:
    run = ws.submit(g.guarded_graph("die", attempts=2), {"value": 1})
    assert wire(finish(run)) == {"status": "failed", "reason": "crash"}
    assert_trace(trace(run), _attempts(["crash", "crash"], "failed/crash"))
    assert all("exit code 7" in (c.detail or "") for c in _completions(run))


def test_timeout_kills_the_worker_process_and_is_retried(ws: Workspace) -> None:
    run = ws.submit(g.guarded_graph("hang", attempts=2, timeout_ms=1500), {"value": 1})
    assert wire(finish(run)) == {"status": "failed", "reason": "timeout"}
    assert_trace(trace(run), _attempts(["timeout", "timeout"], "failed/timeout"))
    for completed in _completions(run):
        pid = ws.pid(completed.completion.reference.execution)
        wait_until(lambda pid=pid: not alive(pid), 5, f"timed-out worker {pid} to die")


def test_timeout_then_success_on_the_next_attempt(ws: Workspace) -> None:
    ws.behave(work={"hang_until": 2})
    run = ws.submit(g.guarded_graph("inc", attempts=2, timeout_ms=2500), {"value": 1})
    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 2}}
    assert_trace(trace(run), _attempts(["timeout", "ok"], "succeeded"))


def test_a_harness_that_cannot_load_refuses_its_execution_and_the_run_ends(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The controller here runs in this process (``in_process``), so the registry can be
    made to lack the python harness; the run must still reach its terminal."""
    from zeroshot_kernel.engine import controller
    from zeroshot_kernel.harness.registry import HarnessUnavailable

    def unavailable(name: str, *, in_process: bool = False) -> object:
        raise HarnessUnavailable(f"the {name} harness is not available in this installation")

    monkeypatch.setattr(controller, "harness_for", unavailable)
    graph, runtime = g.guarded_graph("inc")
    run = ws.client.submit(graph, input={"value": 1}, runtime=runtime, in_process=True)
    assert wire(finish(run)) == {"status": "failed", "reason": "refusal"}
    (completed,) = _completions(run)
    assert completed.detail == "the python harness is not available in this installation"
