"""Helpers for the engine end-to-end tests: a workspace with a real SQLite ledger and the
test workers, readable event traces, and checks on processes and side effects."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support import read_pid_file, wait_until

from zeroshot_kernel.client import Client, Run, RunHeld
from zeroshot_kernel.contract.outcome import ErrorOutcome, VerifierOutcome
from zeroshot_kernel.ledger.events import (
    ExecutionVoided,
    FailedResult,
    ForceStopRequested,
    NodeCompleted,
    NodeStarted,
    RunEvent,
    RunStarted,
    Terminal,
    TerminalResult,
)

WORKERS = Path(__file__).with_name("engine_workers.py")
POLL_S = 0.02


@dataclass
class Workspace:
    """A tmp workspace: ``engine_workers.py``, ``.zeroshot/ledger.db`` and a client on it."""

    root: Path
    client: Client

    @property
    def ledger_path(self) -> Path:
        return self.root / ".zeroshot" / "ledger.db"

    def submit(self, scenario: tuple[dict[str, Any], dict[str, Any]], input: Any) -> Run:
        graph, runtime = scenario
        return self.client.submit(graph, input=input, runtime=runtime, title="engine test")

    def behave(self, **nodes: Mapping[str, Any]) -> None:
        """Script what the workers of each node do (see ``engine_workers``)."""
        (self.root / "behaviour.json").write_text(json.dumps(nodes))

    def effects(self) -> list[dict[str, Any]]:
        path = self.root / "effects.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def pid(self, execution: str, timeout: float = 10.0) -> int:
        """The pid of the worker of ``execution``, once it has started."""
        return int(read_pid_file(self.root / "pids" / execution, timeout))

    def new_client(self) -> Client:
        """A second, independent connection to the same ledger."""
        return Client(self.ledger_path, workspace=str(self.root))


def make_workspace(root: Path) -> Workspace:
    (root / ".zeroshot").mkdir(parents=True, exist_ok=True)
    shutil.copy(WORKERS, root / "engine_workers.py")
    return Workspace(root, Client(root / ".zeroshot" / "ledger.db", workspace=str(root)))


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """A fresh workspace in ``tmp_path / "ws"`` (a plugin: see ``pytest_plugins`` in
    conftest.py)."""
    return make_workspace(tmp_path / "ws")


def finish(run: Run, timeout: float = 30) -> TerminalResult:
    return run.wait(timeout, poll_s=POLL_S)


def wire(result: TerminalResult) -> dict[str, Any]:
    return result.model_dump(mode="json")


# --- traces --------------------------------------------------------------------------------


def describe(events: Iterable[RunEvent]) -> list[str]:
    """One readable item per event that matters to the run's logic (logs and controller
    attachments left out): ``started work#1``, ``started work#1 (2)`` for attempt 2,
    ``completed work#1 ok``, ``voided b#1 parallel_join``, ``terminal failed/timeout``."""
    attempts: dict[str, int] = {}
    items = []
    for event in events:
        match event:
            case RunStarted():
                items.append("run_started")
            case NodeStarted():
                attempts[event.reference.execution] = event.attempt
                items.append(f"started {_instance(event.reference.node_instance, event.attempt)}")
            case NodeCompleted():
                reference = event.completion.reference
                attempt = attempts[reference.execution]
                items.append(
                    f"completed {_instance(reference.node_instance, attempt)} {_outcome(event)}"
                )
            case ExecutionVoided():
                attempt = attempts[event.reference.execution]
                items.append(
                    f"voided {_instance(event.reference.node_instance, attempt)} {event.reason}"
                )
            case ForceStopRequested():
                items.append("stop_requested")
            case Terminal():
                items.append(f"terminal {_result(event.result)}")
    return items


def _instance(node_instance: str, attempt: int) -> str:
    return node_instance if attempt == 1 else f"{node_instance} ({attempt})"


def _outcome(event: NodeCompleted) -> str:
    outcome = event.completion.outcome
    if isinstance(outcome, ErrorOutcome):
        return outcome.code
    if isinstance(outcome, VerifierOutcome):
        return ",".join(f"{k}={v}" for k, v in sorted(outcome.signals.items()))
    return "ok"


def _result(result: TerminalResult) -> str:
    return f"failed/{result.reason}" if isinstance(result, FailedResult) else "succeeded"


def trace(run: Run) -> list[str]:
    return describe(event for _, event in run.events())


def assert_trace(items: list[str], *chains: list[str]) -> None:
    """The trace holds exactly the items of ``chains``, each once, and each chain's items
    in that order (concurrent work may interleave between chains)."""
    expected = [item for chain in chains for item in chain]
    duplicated = [item for item, count in Counter(items).items() if count > 1]
    assert not duplicated, f"repeated events {duplicated} in {items}"
    assert set(items) == set(expected), (
        f"missing {sorted(set(expected) - set(items))}, "
        f"unexpected {sorted(set(items) - set(expected))} in {items}"
    )
    for chain in chains:
        positions = [items.index(item) for item in chain]
        assert positions == sorted(positions), f"{chain} out of order in {items}"


def assert_single_terminal_last(run: Run) -> None:
    kinds = [event.kind for _, event in run.events()]
    assert kinds.count("terminal") == 1, kinds
    assert kinds[-1] == "terminal", kinds


# --- processes -----------------------------------------------------------------------------


def controller_pid(client: Client, run_id: str) -> int:
    """The live controller's pid, from its lease owner ``host:pid:uuid``."""
    lease = client.ledger.lease(run_id)
    assert lease is not None, f"run {run_id} has no controller lease"
    return int(lease.owner.split(":")[1])


def cursor_of(client: Client, run_id: str) -> int:
    return int(client.ledger.snapshot(run_id).cursor.removeprefix("v2:"))


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def resume_when_free(client: Client, run_id: str, timeout: float = 20) -> Run:
    """Resume as soon as the dead controller's lease has expired."""
    resumed: list[Run] = []

    def resume() -> bool:
        try:
            resumed.append(client.resume(run_id))
        except RunHeld:
            return False
        return True

    wait_until(resume, timeout, f"the lease on {run_id} to expire")
    return resumed[0]


ZEROSHOT = [sys.executable, "-m", "zeroshot_kernel"]
