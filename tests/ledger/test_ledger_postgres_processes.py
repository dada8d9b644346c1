"""Runs from several processes on one PostgreSQL ledger, as machines sharing it would:
two ``Client.submit`` runs whose detached controllers are separate processes, followed by a
reader, all finishing with every event seen once and in order. And a password in the
ledger URL is never shown, by the client, the CLI, or a controller's log."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import engine_graphs as g
import pytest
from sqlalchemy.engine import make_url
from support import wait_until

from zeroshot_kernel.client import Client
from zeroshot_kernel.engine.launch import controller_log
from zeroshot_kernel.ledger import LedgerUnavailable, parse_cursor
from zeroshot_kernel.ledger.events import ControllerAttached, SucceededResult
from zeroshot_kernel.workspace import LEDGER_ENV

# slow: a PostgreSQL server and detached controllers
pytestmark = pytest.mark.slow

WORKERS = Path(__file__).parents[1].joinpath("engine_workers.py")
ITERATIONS = 12
DEADLINE_S = 90.0
SECRET = "s3cret-Pa55word"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace holding the test workers; its ledger is the PostgreSQL one, by URL."""
    (tmp_path / ".zeroshot").mkdir()
    shutil.copy(WORKERS, tmp_path / "engine_workers.py")
    return tmp_path


def test_two_detached_controllers_and_a_reader_lose_no_event(
    postgres_url: str,
    workspace: Path,
) -> None:
    # Each run's first worker waits until both runs have a worker going, so the two
    # controllers are certainly writing to the ledger at the same time.
    (workspace / "behaviour.json").write_text('{"bump": {"wait_for_workers": 2}}')
    graph, runtime = g.spin_graph(ITERATIONS)
    submitters = [Client(postgres_url, workspace=str(workspace)) for _ in range(2)]
    reader = Client(postgres_url, workspace=str(workspace))
    try:
        runs = [
            client.submit(graph, input={"value": 0}, runtime=runtime, title=f"shared {n}")
            for n, client in enumerate(submitters)
        ]
        run_ids = [run.id for run in runs]
        seen: dict[str, list[int]] = {run_id: [] for run_id in run_ids}
        after: dict[str, str | None] = dict.fromkeys(run_ids)
        both_running = False
        open_runs = set(run_ids)
        deadline = time.monotonic() + DEADLINE_S
        while open_runs:
            assert time.monotonic() < deadline, f"runs {sorted(open_runs)} did not finish"
            phases = []
            for run_id in run_ids:
                snapshot, events = reader.ledger.snapshot_and_tail(run_id, after[run_id])
                seen[run_id] += [parse_cursor(cursor) for cursor, _ in events]
                if events:
                    assert events[-1][0] == snapshot.cursor, "a tail must end at its snapshot"
                    after[run_id] = snapshot.cursor
                phases.append(snapshot.phase)
                if snapshot.terminal is not None:
                    open_runs.discard(run_id)
            both_running = both_running or phases == ["running", "running"]
            time.sleep(0.02)

        assert both_running, "the reader never saw both runs going at once"
        controllers = set()
        for run in runs:
            result = run.wait(1)
            assert isinstance(result, SucceededResult), result
            assert result.output == {"value": ITERATIONS}
            snapshot, events = reader.ledger.snapshot_and_tail(run.id)
            every = list(range(1, parse_cursor(snapshot.cursor) + 1))
            assert [parse_cursor(cursor) for cursor, _ in events] == every
            assert seen[run.id] == every, "the reader lost, repeated or reordered events"
            attached = [e for _, e in events if isinstance(e, ControllerAttached)]
            assert len(attached) == 1
            controllers.add(int(attached[0].controller.split(":")[1]))
        assert len(controllers) == 2 and os.getpid() not in controllers
    finally:
        for client in (*submitters, reader):
            client.close()


def _zeroshot(workspace: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=workspace,
        env={**os.environ, **env},
    )


def test_a_password_in_the_ledger_url_is_never_shown(
    postgres_url: str,
    workspace: Path,
) -> None:
    # The test server trusts local connections, so any password is accepted.
    url = make_url(postgres_url).set(password=SECRET).render_as_string(hide_password=False)
    assert SECRET in url
    client = Client(url, workspace=str(workspace))
    try:
        assert SECRET not in client.display_url and "***" in client.display_url
        graph, runtime = g.seq_graph()
        run = client.submit(graph, input={"value": 3}, runtime=runtime, title="secret")
        assert isinstance(run.wait(60), SucceededResult)
    finally:
        client.close()
    # The controller logs its last line after it recorded the terminal event: wait for it.
    log_path = controller_log(workspace, run.id)
    wait_until(
        lambda: f"run {run.id} ended" in log_path.read_text(),
        DEADLINE_S,
        "the controller to log its end",
    )
    assert SECRET not in log_path.read_text()

    listed = _zeroshot(workspace, "list", "--ledger", url)
    assert listed.returncode == 0, listed.stderr
    assert run.id in listed.stdout
    missing = _zeroshot(workspace, "status", "run-missing00000", **{LEDGER_ENV: url})
    assert missing.returncode != 0
    assert "***" in missing.stdout + missing.stderr
    for shown in (listed, missing):
        assert SECRET not in shown.stdout + shown.stderr

    closed = make_url(url).set(port=_closed_port()).render_as_string(hide_password=False)
    with pytest.raises(LedgerUnavailable) as unreachable:
        Client(closed, workspace=str(workspace))
    assert SECRET not in str(unreachable.value)


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
