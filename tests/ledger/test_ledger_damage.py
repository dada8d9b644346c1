"""A ledger that cannot be used ends every command in one line naming the ledger and the
problem (exit 2, never a traceback), and what was committed before survives: truncated,
overwritten with garbage, out of space (a file-size limit), read-only, locked by another
process past the busy timeout, unreachable (PostgreSQL). A controller that cannot write
leaves the run explained by ``status``, not silently running."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import engine_graphs as g
import pytest
from conftest import require
from engine_support import Workspace, finish, wire
from sqlalchemy.engine import make_url
from support import wait_until

from zeroshot_kernel.client import Client
from zeroshot_kernel.engine.controller_main import STOPPED

ZEROSHOT = [sys.executable, "-m", "zeroshot_kernel"]
COMMANDS = {
    "list": ["list"],
    "status": ["status", "run-nothere00000"],
    "run": ["run", "graph.json", "--input", '{"value": 5}', "--runtime", "@plan.json"],
}


@pytest.fixture
def one_finished_run(ws: Workspace) -> None:
    """The shared ``ws`` workspace, its ledger holding one finished run, checkpointed into
    its one file: where every test in this module starts."""
    graph, plan = g.guarded_graph("inc")
    (ws.root / "graph.json").write_text(json.dumps(graph))
    (ws.root / "plan.json").write_text(json.dumps(plan))
    run = ws.submit((graph, plan), {"value": 1})
    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 2}}
    ws.client.close()
    # Once the controller process has closed it too, the last connection folds the WAL
    # into the file and removes it.
    wait_until(lambda: _one_file(ws.ledger_path), 30, "the ledger to be one file")


# slow: a zeroshot process per command over real runs
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_finished_run")]


def _one_file(ledger: Path) -> bool:
    with contextlib.closing(sqlite3.connect(ledger)) as database:
        database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return [path.name for path in ledger.parent.glob("ledger.db*")] == ["ledger.db"]


def zeroshot(
    ws: Workspace, *args: str, preexec: Callable[[], None] | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ZEROSHOT, *args],
        cwd=ws.root,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=preexec,
        env={**os.environ, **env},
    )


def one_line(ran: subprocess.CompletedProcess[str], *words: str) -> str:
    """Exit 2, one line on stderr naming the ledger and the problem, nothing started."""
    assert "Traceback" not in ran.stdout + ran.stderr, ran.stderr[-2000:]
    assert ran.returncode == 2, (ran.returncode, ran.stdout, ran.stderr)
    [line] = ran.stderr.splitlines()
    assert line.startswith("error: ledger "), line
    for word in words:
        assert word in line, line
    assert "started" not in ran.stdout
    return line


def history(ws: Workspace) -> dict[str, list[str]]:
    """Every run's events, read afresh through a new client."""
    client = Client(ws.ledger_path, workspace=str(ws.root))
    try:
        return {
            summary.run_id: [event.kind for _, event in client.run(summary.run_id).events()]
            for summary in client.runs()
        }
    finally:
        client.close()


def each_command(ws: Workspace, *words: str, **env: str) -> None:
    for arguments in COMMANDS.values():
        one_line(zeroshot(ws, *arguments, "--ledger", str(ws.ledger_path), **env), *words)


@pytest.mark.parametrize("damage", ["truncated", "garbage pages"])
def test_a_damaged_ledger_is_named_in_one_line_by_every_command(ws: Workspace, damage: str) -> None:
    before = history(ws)
    backup = ws.root / "ledger.backup"
    shutil.copy(ws.ledger_path, backup)
    data = bytearray(ws.ledger_path.read_bytes())
    if damage == "truncated":
        data = data[:5000]
    else:
        data[0:100] = os.urandom(100)
        data[4096:12288] = os.urandom(8192)
    ws.ledger_path.write_bytes(bytes(data))

    each_command(ws, str(ws.ledger_path), "damaged")
    shutil.copy(backup, ws.ledger_path)
    assert history(ws) == before


def test_a_full_disk_fails_the_run_before_it_is_started(ws: Workspace) -> None:
    before = history(ws)

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))

    ran = zeroshot(ws, *COMMANDS["run"], "--ledger", str(ws.ledger_path), preexec=small_files)
    one_line(ran, "disk is full or a file-size limit was hit")
    assert history(ws) == before


def test_a_controller_that_cannot_write_is_explained_by_status(ws: Workspace) -> None:
    graph, plan = g.guarded_graph("talk")
    (ws.root / "graph.json").write_text(json.dumps(graph))
    (ws.root / "plan.json").write_text(json.dumps(plan))
    ws.behave(work={"lines": ["x" * 300] * 400})

    def limited() -> None:  # room to create the run, not for what its controller writes
        resource.setrlimit(resource.RLIMIT_FSIZE, (96 * 1024, 96 * 1024))

    started = zeroshot(
        ws, *COMMANDS["run"], "--detach", "--json", "--ledger", str(ws.ledger_path), preexec=limited
    )
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["runId"]

    def status() -> dict[str, object]:
        shown = zeroshot(ws, "status", run_id, "--json", "--ledger", str(ws.ledger_path))
        assert shown.returncode == 0, shown.stderr
        return dict(json.loads(shown.stdout))

    wait_until(
        lambda: status()["controller"]["phase"] == "gone",  # type: ignore[index]
        60,
        "status to see the controller gone",
    )
    controller = status()["controller"]
    assert isinstance(controller, dict)
    assert f"{STOPPED} {run_id}: the ledger failed" in controller["lastLogLine"]
    assert "file-size limit" in controller["lastLogLine"]
    text = zeroshot(ws, "status", run_id, "--ledger", str(ws.ledger_path)).stdout
    assert "controller: gone" in text and f"zeroshot resume {run_id}" in text
    assert "its log ends:" in text and "the ledger failed" in text


def test_a_foreground_run_names_the_ledger_its_controller_could_not_write(
    ws: Workspace,
) -> None:
    """Attached, the user sees why the controller stopped (the ledger that failed under it)
    in the one line that says how to resume, not only that it is gone."""
    graph, plan = g.guarded_graph("talk")
    (ws.root / "graph.json").write_text(json.dumps(graph))
    (ws.root / "plan.json").write_text(json.dumps(plan))
    ws.behave(work={"lines": ["x" * 300] * 400})

    def limited() -> None:  # room to create the run, not for what its controller writes
        resource.setrlimit(resource.RLIMIT_FSIZE, (96 * 1024, 96 * 1024))

    ran = zeroshot(ws, *COMMANDS["run"], "--ledger", str(ws.ledger_path), preexec=limited)
    assert ran.returncode == 3, (ran.stdout[-500:], ran.stderr[-2000:])
    [line] = ran.stderr.splitlines()
    assert f"{STOPPED} " in line and "the ledger failed" in line, line
    assert "file-size limit" in line and "zeroshot resume run-" in line, line


@pytest.fixture
def read_only(ws: Workspace) -> Iterator[None]:
    """The ledger file and its folder immutable: tests run as root, for whom permission
    bits change nothing, so the file system's immutable flag is used."""
    targets = [str(ws.ledger_path), str(ws.ledger_path.parent)]
    made = subprocess.run(["chattr", "+i", *targets], capture_output=True, text=True)
    require(made.returncode == 0, f"chattr +i (immutable files) failed: {made.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *targets], check=True)


def test_a_read_only_ledger_is_named_in_one_line(ws: Workspace, read_only: None) -> None:
    each_command(ws, str(ws.ledger_path), "cannot be opened or created")


def test_committed_events_survive_a_read_only_spell(ws: Workspace) -> None:
    before = history(ws)
    targets = [str(ws.ledger_path), str(ws.ledger_path.parent)]
    made = subprocess.run(["chattr", "+i", *targets], capture_output=True, text=True)
    require(made.returncode == 0, f"chattr +i (immutable files) failed: {made.stderr.strip()}")
    try:
        one_line(zeroshot(ws, *COMMANDS["run"], "--ledger", str(ws.ledger_path)))
    finally:
        subprocess.run(["chattr", "-i", *targets], check=True)
    assert history(ws) == before


LOCK_HOLDER = """
import sqlite3, sys
database = sqlite3.connect(sys.argv[1], isolation_level=None)
database.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
"""


def test_a_ledger_locked_past_the_busy_timeout_is_named_in_one_line(ws: Workspace) -> None:
    before = history(ws)
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(ws.ledger_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        # Reading takes no write lock: listing goes on while a writer holds the ledger.
        listed = zeroshot(ws, *COMMANDS["list"], "--ledger", str(ws.ledger_path))
        assert listed.returncode == 0 and list(before) == [
            line.split()[0] for line in listed.stdout.splitlines()
        ], listed.stderr
        one_line(
            zeroshot(
                ws,
                *COMMANDS["run"],
                "--ledger",
                str(ws.ledger_path),
                ZEROSHOT_LEDGER_BUSY_TIMEOUT_S="0.5",
            ),
            "locked by another process",
        )
    finally:
        holder.communicate("")
    assert history(ws) == before


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_postgresql_ledger_is_named_without_its_password(
    ws: Workspace, postgres_url: str
) -> None:
    url = make_url(postgres_url).set(port=_closed_port(), password="s3cr3t-pw")
    shown = url.render_as_string(hide_password=False)
    for arguments in COMMANDS.values():
        line = one_line(zeroshot(ws, *arguments, "--ledger", shown), "cannot be reached")
        assert "s3cr3t-pw" not in line and "***" in line


CRASHING_COMMAND = """
import sys
from zeroshot_kernel.cli import app, main

@app.command("explode")
def explode() -> None:
    raise RuntimeError("an unforeseen bug")

sys.argv = ["zeroshot", "explode"]
main()
"""


def test_an_unexpected_error_is_one_line_and_a_report_file(ws: Workspace) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", CRASHING_COMMAND],
        cwd=ws.root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    [line] = ran.stderr.splitlines()
    assert line.startswith("error: internal error: RuntimeError: an unforeseen bug; ")
    report = Path(line.rsplit("the full report is in ", 1)[1])
    text = report.read_text()
    assert "Traceback" in text and "an unforeseen bug" in text
    assert report.stat().st_mode & 0o077 == 0
