"""Stopping runs: one atomic close as ``failed/force_stopped`` with refusals for every
active execution, nothing after it, worker processes gone; and what happens to workers
and runs whose controller died."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import engine_graphs as g
import pytest
from engine_support import (
    Workspace,
    assert_single_terminal_last,
    assert_trace,
    controller_pid,
    cursor_of,
    finish,
    kill,
    make_workspace,
    trace,
    wire,
)
from support import alive, wait_until

from zeroshot_kernel.client import Run
from zeroshot_kernel.ledger.events import NodeCompleted

# slow: detached controllers and worker processes, stopped and killed
pytestmark = pytest.mark.slow

FORCE_STOPPED = {"status": "failed", "reason": "force_stopped"}


class Observer(threading.Thread):
    """Reads the run's snapshot as fast as it can, on its own connection, remembering every
    cursor it saw: a close written in several transactions would show up in between."""

    def __init__(self, ws: Workspace, run_id: str) -> None:
        super().__init__(daemon=True)
        self.client = ws.new_client()
        self.run_id = run_id
        self.seen: set[int] = set()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.seen.add(cursor_of(self.client, self.run_id))
            time.sleep(0.001)
        self.client.close()


def stop_while_active(ws: Workspace, run: Run, active: int) -> list[str]:
    """Stop ``run`` once ``active`` executions are running; return the active instances."""
    wait_until(
        lambda: len(ws.client.ledger.snapshot(run.id).active()) == active,
        20,
        f"{active} active executions",
    )
    running = ws.client.ledger.snapshot(run.id).active()
    for execution in running:
        ws.pid(execution.reference.execution)  # waits for each worker to start
    controller = controller_pid(ws.client, run.id)
    observer = Observer(ws, run.id)
    observer.start()
    try:
        assert run.stop() == "requested"
        assert wire(finish(run)) == FORCE_STOPPED
    finally:
        observer.done.set()
        observer.join()

    # The close: after the stop request, one refusal per active execution, then the terminal.
    events = list(run.events())
    kinds = [event.kind for _, event in events]
    stop_at = kinds.index("force_stop_requested")
    close = [event for _, event in events[stop_at + 1 :] if event.kind != "safe_log"]
    assert close[-1].kind == "terminal"
    refusals = [e for e in close[:-1] if isinstance(e, NodeCompleted)]
    assert len(refusals) == len(close) - 1
    assert {e.completion.outcome.to_wire()["code"] for e in refusals} == {"refusal"}
    refused = sorted(e.completion.reference.execution for e in refusals)
    assert refused == sorted(e.reference.execution for e in running)
    # Written in one transaction: no reader ever saw the run between the first refusal and
    # the terminal.
    terminal = len(events)
    first_refusal = terminal - len(refusals)
    assert not observer.seen & set(range(first_refusal, terminal)), sorted(observer.seen)

    # The controller and the workers are gone; once every process that could still write
    # has exited, nothing came after the terminal.
    wait_until(lambda: not alive(controller), 10, "the controller to exit")
    for execution in running:
        pid = ws.pid(execution.reference.execution)
        wait_until(lambda pid=pid: not alive(pid), 5, f"worker {pid} to be killed")
    assert cursor_of(ws.client, run.id) == terminal
    assert_single_terminal_last(run)
    return sorted(e.reference.node_instance for e in running)


def test_stop_during_par_closes_the_run_atomically(ws: Workspace) -> None:
    ws.behave(left={"hang_until": 99}, right={"hang_until": 99})
    run = ws.submit(g.par_all_graph(), {"value": 1})
    assert stop_while_active(ws, run, 2) == ["left#1", "right#1"]
    assert_trace(
        trace(run),
        [
            "run_started",
            "started left#1",
            "stop_requested",
            "completed left#1 refusal",
            "terminal failed/force_stopped",
        ],
        [
            "run_started",
            "started right#1",
            "stop_requested",
            "completed right#1 refusal",
            "terminal failed/force_stopped",
        ],
    )


def test_stop_during_map_closes_the_run_atomically(ws: Workspace) -> None:
    ws.behave(square={"hang_until": 99})
    run = ws.submit(g.map_graph(), {"items": [{"n": 1}, {"n": 2}, {"n": 3}]})
    assert stop_while_active(ws, run, 3) == ["square[0]#1", "square[1]#1", "square[2]#1"]


def test_stop_before_the_controller_starts(ws: Workspace) -> None:
    """Whoever closes it (this caller, if the controller has no lease yet, or the controller
    as it attaches), the run ends force_stopped without dispatching anything."""
    run = ws.submit(g.seq_graph(), {"value": 1})
    assert run.stop() in ("closed", "requested")
    assert wire(finish(run)) == FORCE_STOPPED
    assert trace(run)[-2:] == ["stop_requested", "terminal failed/force_stopped"]
    assert not any(item.startswith("started") for item in trace(run))
    log = ws.root / ".zeroshot" / "controllers" / f"{run.id}.log"
    wait_until(
        lambda: "ended" in log.read_text() or "held by" in log.read_text(),
        20,
        "the controller to finish",
    )
    assert "Traceback" not in log.read_text()


def test_stop_is_honoured_while_the_controller_is_dispatching(tmp_path: Path) -> None:
    """A stop recorded between the controller's read of the run and its next dispatch must
    still close the run (``node_started`` is refused once the run is stopping). Late in a
    long loop the reducer's walk makes that window most of each cycle: without the fix about
    two stops in three hit it and the run stays ``stopping`` forever. The loops run far
    longer than the test waits, so every run is still spinning when its stop comes."""
    workspaces = [make_workspace(tmp_path / f"run{i}") for i in range(3)]
    runs = [ws.submit(g.spin_graph(rounds=50), {"value": 0}) for ws in workspaces]
    for index, (ws, run) in enumerate(zip(workspaces, runs, strict=True)):
        at = 120 + 10 * index
        wait_until(
            lambda ws=ws, run=run, at=at: cursor_of(ws.client, run.id) >= at, 30, "the loop to spin"
        )
        assert run.stop() == "requested"
    for ws, run in zip(workspaces, runs, strict=True):
        assert wire(finish(run, 10)) == FORCE_STOPPED
        assert_single_terminal_last(run)
        log = (ws.root / ".zeroshot" / "controllers" / f"{run.id}.log").read_text()
        assert "Traceback" not in log


def test_workers_die_with_their_controller_and_stop_closes_the_orphaned_run(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZEROSHOT_LEASE_TTL_S", "1")
    run = ws.submit(g.single_step_graph("hang"), {"value": 1})
    wait_until(lambda: len(ws.client.ledger.snapshot(run.id).active()) == 1, 20, "the step")
    [execution] = ws.client.ledger.snapshot(run.id).active()
    worker = ws.pid(execution.reference.execution)  # once the worker has started
    kill(controller_pid(ws.client, run.id))
    # A worker must not outlive its controller: a resumed run would retry its execution
    # while the orphan still changes the workspace.
    wait_until(lambda: not alive(worker), 5, "the orphaned worker to exit")

    # While the dead controller's lease lasts, stop can only ask; once it lapsed, stop
    # closes the run itself as runtime_lost, its in-flight execution a crash.
    wait_until(lambda: run.stop() == "closed", 10, "the lease to lapse")
    assert wire(finish(run)) == {"status": "failed", "reason": "runtime_lost"}
    assert trace(run)[-3:] == [
        "stop_requested",
        "completed work#1 crash",
        "terminal failed/runtime_lost",
    ]
    assert run.stop() == "already_finished"
