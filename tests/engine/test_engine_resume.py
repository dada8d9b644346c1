"""kill -9 of the detached controller at many points of a run, then ``resume``: the result
is the uninterrupted run's, no completed execution ran twice, one terminal, nothing after.

Each run is killed several times, each time once the ledger cursor reaches the next kill
point; the controllers use a short lease (``ZEROSHOT_LEASE_TTL_S``) so resuming is quick.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import engine_graphs as g
import pytest
from engine_support import (
    Workspace,
    assert_single_terminal_last,
    controller_pid,
    cursor_of,
    finish,
    kill,
    make_workspace,
    resume_when_free,
    wire,
)
from support import alive, wait_until

from zeroshot_kernel.client import Run
from zeroshot_kernel.contract.outcome import ErrorOutcome
from zeroshot_kernel.ledger.events import ControllerAttached, NodeCompleted, NodeStarted

# slow: detached controllers killed many times and resumed
pytestmark = pytest.mark.slow

INPUT = {"value": 0, "items": [{"n": 1}, {"n": 2}]}
EXPECTED = {"status": "succeeded", "output": {"value": 3, "results": [1, 4]}}
SLOW = {
    "prep": {"sleep": 0.2},
    "left": {"sleep": 0.3},
    "right": {"sleep": 1.0},
    "square": {"sleep": 0.2},
    "bump": {"sleep": 0.15},
    "gate": {"sleep": 0.1},
}
# Four runs, five kills each: twenty distinct cursors, from before the first event to the
# last iteration of the loop.
KILL_POINTS = [[0, 4, 8, 12, 16], [1, 5, 9, 13, 17], [2, 6, 10, 14, 18], [3, 7, 11, 15, 19]]


@pytest.fixture(autouse=True)
def short_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZEROSHOT_LEASE_TTL_S", "1")


@dataclass(frozen=True)
class Kill:
    target: int
    cursor: int
    active: int


def controller_processes(run_id: str) -> list[int]:
    """Live controller processes of ``run_id`` (from /proc: the lease may name a dead one)."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"zeroshot_kernel.engine.controller_main" in words and run_id.encode() in words:
            pid = int(cmdline.parent.name)
            if alive(pid):
                pids.append(pid)
    return pids


def kill_at(ws: Workspace, run: Run, target: int, after: int) -> Kill:
    """Once the cursor reaches ``target`` and has passed ``after`` (the previous kill's), and
    past 0 the live controller holds the lease, SIGKILL that controller; wait till it is gone."""
    found: list[int] = []

    def ready() -> bool:
        snapshot = ws.client.ledger.snapshot(run.id)
        assert snapshot.terminal is None, f"{run.id} finished before kill point {target}"
        cursor = int(snapshot.cursor[3:])
        if cursor < target or (target > 0 and cursor <= after):
            return False
        # Two processes while the controller forks a worker (before exec it has the same
        # command line): wait for one.
        live = controller_processes(run.id)
        if len(live) != 1 or (target > 0 and controller_pid(ws.client, run.id) != live[0]):
            return False
        found.extend(live)
        return True

    wait_until(ready, 30, f"kill point {target}")
    [pid] = found
    kill(pid)
    wait_until(lambda: not alive(pid), 5, "the killed controller to go")
    snapshot = ws.client.ledger.snapshot(run.id)
    return Kill(target, cursor_of(ws.client, run.id), len(snapshot.active()))


def drive(ws: Workspace, points: list[int], kills: list[Kill], errors: list[BaseException]) -> None:
    try:
        ws.behave(**SLOW)
        run = ws.submit(g.resume_graph(), INPUT)
        for target in points:
            kills.append(kill_at(ws, run, target, kills[-1].cursor if kills else -1))
            resume_when_free(ws.client, run.id)
        finish(run, 60)
    except BaseException as error:  # reported by the test thread
        errors.append(error)


def check_effects(ws: Workspace, run: Run) -> None:
    """No execution reached its side effect twice; every success was recorded exactly once,
    and each node instance succeeded once."""
    effects = Counter(effect["execution"] for effect in ws.effects())
    assert max(effects.values()) == 1, f"executions ran twice: {effects.most_common(3)}"
    succeeded = [
        event.completion.reference
        for _, event in run.events()
        if isinstance(event, NodeCompleted)
        and not isinstance(event.completion.outcome, ErrorOutcome)
    ]
    assert all(effects[reference.execution] == 1 for reference in succeeded)
    instances = Counter(reference.node_instance for reference in succeeded)
    assert set(instances.values()) == {1}, instances


def test_the_uninterrupted_run(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.behave(**SLOW)
    run = ws.submit(g.resume_graph(), INPUT)
    assert wire(finish(run)) == EXPECTED
    assert_single_terminal_last(run)
    check_effects(ws, run)
    # Enough events for every kill point to fall inside the run.
    assert cursor_of(ws.client, run.id) > max(max(points) for points in KILL_POINTS) + 2


def test_kill_minus_nine_at_twenty_points_then_resume(tmp_path: Path) -> None:
    workspaces = [make_workspace(tmp_path / f"run{i}") for i in range(len(KILL_POINTS))]
    kills: list[list[Kill]] = [[] for _ in workspaces]
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=drive, args=(ws, points, found, errors), daemon=True)
        for ws, points, found in zip(workspaces, KILL_POINTS, kills, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    if errors:
        raise errors[0]
    assert not any(thread.is_alive() for thread in threads), "a run never finished"

    assert sorted(k.target for found in kills for k in found) == list(range(20))
    for ws, found in zip(workspaces, kills, strict=True):
        [summary] = ws.client.runs()
        run = ws.client.run(summary.run_id)
        assert wire(run.wait(1)) == EXPECTED
        assert_single_terminal_last(run)
        check_effects(ws, run)
        events = [event for _, event in run.events()]
        # Each kill landed at its own position of the run, and a new controller took over.
        assert len({k.cursor for k in found}) == len(found)
        attached = [e.resumed for e in events if isinstance(e, ControllerAttached)]
        unattached = sum(k.cursor == 0 for k in found)
        assert attached == [False] + [True] * (len(found) - unattached)
        # Executions left in flight were closed as crashes and retried as new executions
        # (except a racer whose par another racer had already won).
        lost = [
            e for e in events if isinstance(e, NodeCompleted) and "runtime_lost" in (e.detail or "")
        ]
        assert len(lost) == sum(k.active for k in found)
        retried = {
            e.reference.node_instance
            for e in events
            if isinstance(e, NodeStarted) and e.attempt > 1
        }
        racers = {"left#1", "right#1"}
        assert retried | racers >= {e.completion.reference.node_instance for e in lost}
    assert sum(k.active for found in kills for k in found) > 0, "some kill hit work in flight"
