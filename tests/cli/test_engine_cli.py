"""``zeroshot run | list | status | logs | watch | stop | resume`` as a user runs them: a
real subprocess per command, on a SQLite ledger named with ``--ledger``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import engine_graphs as g
import pytest
from engine_support import Workspace, controller_pid, finish, kill, wire
from support import wait_until

# slow: a zeroshot process per command and detached controllers
pytestmark = pytest.mark.slow

ZEROSHOT = [sys.executable, "-m", "zeroshot_kernel"]


def zeroshot(ws: Workspace, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ZEROSHOT, *args, "--ledger", str(ws.ledger_path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ws.root,
        env={**os.environ, **env},
    )


def write(ws: Workspace, scenario: tuple[dict[str, Any], dict[str, Any]]) -> tuple[str, str]:
    graph, runtime = scenario
    (ws.root / "graph.json").write_text(json.dumps(graph))
    (ws.root / "plan.json").write_text(json.dumps(runtime))
    return "graph.json", "@plan.json"


def test_run_attached_exits_0_on_success_and_1_on_failure(ws: Workspace) -> None:
    graph, plan = write(ws, g.seq_graph())
    checked = zeroshot(
        ws, "run", graph, "--input", '{"value": 3}', "--runtime", plan, "--validate-only"
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert ws.client.runs() == []

    ok = zeroshot(ws, "run", graph, "--input", '{"value": 3}', "--runtime", plan)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    lines = ok.stdout.splitlines()
    assert lines[0].startswith("started run-")
    run_id = lines[0].split()[1]
    research = zeroshot(ws, "research", "show", run_id)  # not a research run: no rounds
    assert research.returncode == 2 and research.stderr.strip() == (
        f"error: run {run_id} is not an auto-research run; see it with: zeroshot status {run_id}"
    )
    assert "started   inc#1" in ok.stdout
    assert lines[-1].endswith('finished  succeeded: {"value": 8}')

    graph, plan = write(ws, g.guarded_graph("crash"))
    failed = zeroshot(ws, "run", graph, "--input", '{"value": 3}', "--runtime", plan)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    finished, cause = failed.stdout.splitlines()[-2:]
    assert finished.endswith("finished  failed: crash")
    assert cause.startswith("failed: crash (node work: crash - RuntimeError: this worker")
    assert len(ws.client.runs()) == 2


def test_run_attached_with_json_prints_json_lines(ws: Workspace) -> None:
    """The run id, every event as the ledger recorded it with its cursor, then a failed
    run's cause: each line one JSON object, nothing else on stdout."""
    graph, plan = write(ws, g.seq_graph())
    ok = zeroshot(ws, "run", graph, "--input", '{"value": 3}', "--runtime", plan, "--json")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    first, *events = [json.loads(line) for line in ok.stdout.splitlines()]
    assert first == {"runId": ws.client.runs()[0].run_id}
    recorded = list(ws.client.run(first["runId"]).events())
    assert [(e["cursor"], e["event"]) for e in events] == [
        (cursor, event.to_wire()) for cursor, event in recorded
    ]
    assert events[-1]["event"]["result"] == {"status": "succeeded", "output": {"value": 8}}

    graph, plan = write(ws, g.guarded_graph("crash"))
    failed = zeroshot(ws, "run", graph, "--input", '{"value": 3}', "--runtime", plan, "--json")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    *_, terminal, cause = [json.loads(line) for line in failed.stdout.splitlines()]
    assert terminal["event"]["kind"] == "terminal"
    assert cause["failure"]["node"] == "work" and cause["failure"]["code"] == "crash"


def test_a_detached_run_observed_stopped_and_watched(ws: Workspace) -> None:
    graph, plan = write(ws, g.single_step_graph("announce_then_hang", timeout_ms=600_000))
    started = zeroshot(
        ws, "run", graph, "--input", '{"value": 3}', "--runtime", plan, "--detach", "--json"
    )
    assert started.returncode == 0, started.stderr
    reply = json.loads(started.stdout)
    assert list(reply) == ["runId"]
    run_id = reply["runId"]
    run = ws.client.run(run_id)
    wait_until(lambda: any(True for _ in run.logs()), 20, "the worker's first line")

    status = json.loads(zeroshot(ws, "status", run_id, "--json").stdout)
    assert list(status) == ["runId", "title", "atCursor", "status", "sandbox", "controller"]
    assert status["sandbox"] == "bwrap"
    assert status["controller"]["phase"] == "live"
    assert status["runId"] == run_id and status["title"] == "graph"
    assert status["atCursor"].startswith("v2:")
    [active] = run.status().status.active_executions or []
    assert status["status"] == {
        "phase": "running",
        "activeExecutions": [{"execution": active.execution, "node": "work"}],
    }

    logs = zeroshot(ws, "logs", run_id, "--json").stdout.splitlines()
    [line] = [json.loads(text) for text in logs]
    assert line == {
        "cursor": line["cursor"],
        "kind": "safe_log",
        "execution": active.execution,
        "stream": "output",
        "line": "working on 3",
    }
    assert int(line["cursor"][3:]) <= int(status["atCursor"][3:])

    listed = zeroshot(ws, "list").stdout
    assert run_id in listed and "running" in listed

    stopped = zeroshot(ws, "stop", run_id)
    assert stopped.returncode == 0
    assert "stop requested" in stopped.stdout

    watched = zeroshot(ws, "watch", run_id)
    assert watched.returncode == 1
    assert "stop requested" in watched.stdout
    assert watched.stdout.splitlines()[-1].endswith("finished  failed: force_stopped")
    assert run.status().to_wire() == {
        "runId": run_id,
        "title": "graph",
        "atCursor": run.status().at_cursor,
        "status": {
            "phase": "finished",
            "terminalResult": {"status": "failed", "reason": "force_stopped"},
        },
    }


def test_resume_after_the_controller_was_killed(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZEROSHOT_LEASE_TTL_S", "1")
    ws.behave(work={"sleep": 1.0})
    run = ws.submit(g.guarded_graph("inc", attempts=2), {"value": 3})
    wait_until(lambda: bool(ws.client.ledger.snapshot(run.id).active()), 20, "the step")
    kill(controller_pid(ws.client, run.id))

    def lapsed() -> bool:
        lease = ws.client.ledger.lease(run.id)
        return lease is None or lease.expires_at.timestamp() < time.time()

    wait_until(lapsed, 10, "the dead controller's lease to lapse")
    resumed = zeroshot(ws, "resume", run.id)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "runtime_lost" in resumed.stdout
    assert "started   work#1 (attempt 2)" in resumed.stdout
    assert resumed.stdout.splitlines()[-1].endswith('finished  succeeded: {"value": 4}')
    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 4}}
