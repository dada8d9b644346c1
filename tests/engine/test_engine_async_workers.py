"""Async worker callables under the python harness: an ``async def`` step and verifier (and
a verifier object whose ``__call__`` is a coroutine), in worker processes and in-process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import engine_graphs as g
import pytest
from engine_support import assert_trace, make_workspace, trace, wire

# slow: detached controllers and worker processes
pytestmark = pytest.mark.slow


def async_graph(judge: str) -> g.Scenario:
    """``inc`` then the verifier ``judge``: value 3 becomes 4, which is accepted."""
    judge_node = g.verifier(
        "judge",
        input=g.VALUE,
        reads={"value": g.state("value")},
        signals={"verdict": g.VERDICT, "size": ["big", "small"]},
    )
    route = g.choice(
        "route",
        g.VALUE,
        [(g.signalled("judge", "verdict", "accepted"), g.value_result())],
        g.fail("rejected", "rejected"),
    )
    root = g.seq("root", g.VALUE, g.value_step("inc"), judge_node, route)
    return g.graph(g.VALUE, root), g.plan({"inc": "async_inc", "judge": judge})


@pytest.mark.parametrize("judge", ["async_judge", "awaitable_judge"])
@pytest.mark.parametrize("in_process", [False, True], ids=["worker-process", "in-process"])
def test_async_step_and_verifier_are_awaited(tmp_path: Path, judge: str, in_process: bool) -> None:
    ws = make_workspace(tmp_path)
    graph, runtime = async_graph(judge)
    run = ws.client.submit(graph, input={"value": 3}, runtime=runtime, in_process=in_process)

    result = asyncio.run(asyncio.wait_for(run.aresult(poll_s=0.02), 30))
    assert wire(result) == {"status": "succeeded", "output": {"value": 4}}
    assert_trace(
        trace(run),
        [
            "run_started",
            "started inc#1",
            "completed inc#1 ok",
            "started judge#1",
            "completed judge#1 size=small,verdict=accepted",
            "terminal succeeded",
        ],
    )
    assert [effect["node"] for effect in ws.effects()] == ["inc", "judge"]
    if not in_process:  # in-process workers print to this process, not to the run's log
        assert [log.line for _, log in run.logs()] == ["async inc 3"]
