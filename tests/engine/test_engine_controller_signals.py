"""A dying controller with a foreground client attached: real detached controllers, real
signals, the real ``zeroshot run`` in the foreground.

SIGKILL: the client says so within seconds and resume takes over at once (the dead
holder's process is provably gone). SIGTERM: the controller records it, releases its
lease and stops its worker; resume works at once. SIGSTOP past the lease: another
controller takes over; after SIGCONT the paused one's writes are refused (the lease fences
every append) and it exits without writing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import engine_graphs as g
import pytest
from engine_support import Workspace, controller_pid, finish, trace, wire
from support import alive, pid_files, wait_until

from zeroshot_kernel.engine.controller_main import STOPPED
from zeroshot_kernel.engine.launch import controller_log, last_log_line
from zeroshot_kernel.ledger import LeaseNotHeld
from zeroshot_kernel.ledger.events import SafeLog

# slow: detached controllers killed and signalled, zeroshot processes
pytestmark = pytest.mark.slow

ZEROSHOT = [sys.executable, "-m", "zeroshot_kernel"]
DEADLINE_S = 30


def _foreground(ws: Workspace, **env: str) -> subprocess.Popen[str]:
    """``zeroshot run`` attached, on a step that hangs on its first attempt only."""
    graph, plan = g.guarded_graph("inc", attempts=3, timeout_ms=120_000)
    (ws.root / "graph.json").write_text(json.dumps(graph))
    (ws.root / "plan.json").write_text(json.dumps(plan))
    ws.behave(work={"hang_until": 2})
    return subprocess.Popen(
        [
            *ZEROSHOT,
            "run",
            "graph.json",
            "--input",
            '{"value": 1}',
            "--runtime",
            "@plan.json",
            "--ledger",
            str(ws.ledger_path),
        ],
        cwd=ws.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def _first_worker(ws: Workspace) -> tuple[str, int, int]:
    """The run, its controller's pid and its first (hanging) worker's pid, once it hangs."""
    wait_until(lambda: len(ws.client.runs()) == 1, DEADLINE_S, "the run to be created")
    [summary] = ws.client.runs()
    pids = ws.root / "pids"
    wait_until(lambda: pid_files(pids), DEADLINE_S, "the first worker to start")
    [pid_file] = pid_files(pids)
    return summary.run_id, controller_pid(ws.client, summary.run_id), int(pid_file.read_text())


def _ended(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    stdout, stderr = process.communicate(timeout=DEADLINE_S)
    return process.returncode, stdout, stderr


def test_sigkill_the_foreground_client_says_so_and_resume_takes_over_at_once(
    ws: Workspace,
) -> None:
    client = _foreground(ws)
    run_id, controller, worker = _first_worker(ws)
    os.kill(controller, signal.SIGKILL)
    killed_at = time.monotonic()

    code, _, stderr = _ended(client)
    assert time.monotonic() - killed_at < 15
    assert code == 3
    [line] = stderr.splitlines()
    assert f"the controller of {run_id} stopped" in line and "is gone" in line
    assert f"resume it with `zeroshot resume {run_id}`" in line
    wait_until(lambda: not alive(worker), 10, "the orphaned worker to die")

    status = json.loads(
        subprocess.run(
            [*ZEROSHOT, "status", run_id, "--json", "--ledger", str(ws.ledger_path)],
            cwd=ws.root,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
    )
    assert status["controller"]["phase"] == "gone"

    # Its lease (15 s by default) is still live, yet resume takes over at once.
    lease = ws.client.ledger.lease(run_id)
    assert lease is not None and lease.expires_at.timestamp() > time.time()
    resumed = ws.client.resume(run_id)
    assert wire(finish(resumed, DEADLINE_S)) == {"status": "succeeded", "output": {"value": 2}}
    assert "completed work#1 crash" in trace(resumed)


def test_sigterm_records_the_interruption_releases_the_lease_and_stops_the_worker(
    ws: Workspace,
) -> None:
    client = _foreground(ws)
    run_id, controller, worker = _first_worker(ws)
    os.kill(controller, signal.SIGTERM)

    wait_until(lambda: not alive(controller), 10, "the controller to exit")
    wait_until(lambda: not alive(worker), 10, "its worker to be stopped")
    assert ws.client.ledger.lease(run_id) is None
    notes = [e.line for _, e in ws.client.run(run_id).logs() if e.stream == "system"]
    assert any(
        "interrupted (SIGTERM)" in note and f"zeroshot resume {run_id}" in note for note in notes
    )
    code, _, stderr = _ended(client)
    assert code == 3 and "no controller holds the run" in stderr

    resumed = ws.client.resume(run_id)
    assert wire(finish(resumed, DEADLINE_S)) == {"status": "succeeded", "output": {"value": 2}}


def test_a_paused_controller_cannot_write_after_another_took_over(ws: Workspace) -> None:
    ttl = "2"
    client = _foreground(ws, ZEROSHOT_LEASE_TTL_S=ttl)
    run_id, controller, _ = _first_worker(ws)
    os.kill(controller, signal.SIGSTOP)
    try:
        lease = ws.client.ledger.lease(run_id)
        assert lease is not None
        wait_until(lambda: lease.expires_at.timestamp() < time.time(), 10, "the lease to lapse")
        paused_owner = lease.owner
        resumed = ws.client.resume(run_id)
        wait_until(
            lambda: (
                (held := ws.client.ledger.lease(run_id)) is not None and held.owner != paused_owner
            ),
            DEADLINE_S,
            "the new controller's lease",
        )
        # What the paused controller would do first on waking: append. Refused.
        with pytest.raises(LeaseNotHeld):
            ws.client.ledger.append(
                run_id, [SafeLog(stream="system", line="late")], owner=paused_owner
            )
    finally:
        os.kill(controller, signal.SIGCONT)
    assert wire(finish(resumed, DEADLINE_S)) == {"status": "succeeded", "output": {"value": 2}}
    wait_until(lambda: not alive(controller), DEADLINE_S, "the paused controller to exit")
    last = last_log_line(ws.root, run_id)
    # The paused controller's own log is the resumed one's too (same file): the paused
    # one's last words are in it, saying it stopped without finishing the run.
    log_text = controller_log(ws.root, run_id).read_text()
    assert f"{STOPPED} {run_id} without finishing it" in log_text, last
    events = [event for _, event in ws.client.run(run_id).events()]
    assert not any(isinstance(e, SafeLog) and e.line == "late" for e in events)
    client.kill()
    client.communicate()
