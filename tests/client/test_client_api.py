"""The Python API's promises about a run's life: a rejected submission creates nothing, a
``wait`` that times out and an awaited ``result()`` that is cancelled leave the run going.

The worker waits on a gate file the test creates, so "still running" is a fact of the
ledger (its execution is active), never a matter of timing."""

from __future__ import annotations

import asyncio

import engine_graphs as g
import pytest
from engine_support import (
    Workspace,
    assert_single_terminal_last,
    controller_pid,
    finish,
    trace,
    wire,
)
from support import alive, wait_until

from zeroshot_kernel.client import AdmissionRejected, Run

# slow: detached controllers and worker processes
pytestmark = pytest.mark.slow

GATE = "gate"
RAN = ["run_started", "started work#1", "completed work#1 ok", "terminal succeeded"]


def gated_run(ws: Workspace, *, in_process: bool = False) -> Run:
    """A one-step run whose step is active until :func:`open_gate`."""
    ws.behave(work={"wait_for_file": GATE})
    graph, runtime = g.single_step_graph("inc")
    run = ws.client.submit(graph, input={"value": 3}, runtime=runtime, in_process=in_process)
    wait_until(lambda: _active_nodes(run) == ["work"], 20, "the step to start")
    return run


def open_gate(ws: Workspace) -> None:
    (ws.root / GATE).touch()


def _active_nodes(run: Run) -> list[str]:
    return [active.node for active in run.status().active_executions]


def test_a_rejected_submission_raises_and_creates_no_run(ws: Workspace) -> None:
    graph, runtime = g.seq_graph()
    graph["root"]["children"][1]["inputBindings"] = []  # double's input is never built

    with pytest.raises(AdmissionRejected) as rejected:
        ws.client.submit(graph, input={"value": 3}, runtime=runtime, title="rejected")

    assert [(d.code, d.readable_path()) for d in rejected.value.diagnostics] == [
        ("undefined_read", "root › children[1] › double › inputBindings")
    ]
    assert "undefined_read" in str(rejected.value)
    assert ws.client.runs() == []
    assert ws.new_client().runs() == []  # nor seen through another connection
    assert not (ws.root / ".zeroshot" / "controllers").exists()


def test_wait_times_out_and_the_run_goes_on(ws: Workspace) -> None:
    run = gated_run(ws)

    with pytest.raises(TimeoutError, match=run.id):
        run.wait(timeout=0.2, poll_s=0.02)

    assert run.status().phase == "running"
    assert _active_nodes(run) == ["work"]
    assert alive(controller_pid(ws.client, run.id))
    open_gate(ws)
    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 4}}
    assert trace(run) == RAN


@pytest.mark.parametrize("in_process", [False, True], ids=["detached", "in-process"])
def test_cancelling_an_awaited_result_does_not_stop_the_run(
    ws: Workspace, in_process: bool
) -> None:
    run = gated_run(ws, in_process=in_process)

    async def await_then_cancel() -> None:
        waiting = asyncio.create_task(run.aresult(poll_s=0.02))
        # It polls and keeps waiting: the run cannot end while its step is gated.
        done, _ = await asyncio.wait({waiting}, timeout=0.1)
        assert not done
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    asyncio.run(await_then_cancel())

    assert run.status().phase == "running"
    assert _active_nodes(run) == ["work"]
    open_gate(ws)
    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 4}}
    assert trace(run) == RAN  # no stop request, no refusal: the run ended by itself
    assert_single_terminal_last(run)
