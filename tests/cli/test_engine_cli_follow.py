"""The CLI's following commands as a user meets them, each a real ``zeroshot`` process:
Ctrl-C on an attached ``run`` detaches (the run finishes anyway), ``logs -f`` follows to
the end, ``--cursor`` starts after a line, ``--title`` names the run in ``list``, and
``ZEROSHOT_LEDGER`` picks the ledger.

Workers wait on a gate file, so "the run is still going" is a fact of the ledger, not of
timing; the test reads the CLI's output line by line to know where it is."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import engine_graphs as g
import pytest
from engine_support import Workspace, controller_pid, finish, wire
from support import alive

from zeroshot_kernel.client import Client

# slow: zeroshot processes and detached controllers
pytestmark = pytest.mark.slow

ZEROSHOT = [sys.executable, "-m", "zeroshot_kernel"]
GATE = "gate"
TIMEOUT_S = 30


class Lines:
    """A process's output read on a thread, so the test can wait for a line with a timeout."""

    def __init__(self, stream: IO[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def until(self, pattern: str) -> re.Match[str]:
        """Wait for (and return) the first new line matching ``pattern``."""
        while True:
            line = self._queue.get(timeout=TIMEOUT_S)
            assert line is not None, f"output ended before {pattern!r}: {self.seen}"
            self.seen.append(line)
            if found := re.search(pattern, line):
                return found

    def rest(self) -> list[str]:
        """Every remaining line, once the process has closed its output."""
        while (line := self._queue.get(timeout=TIMEOUT_S)) is not None:
            self.seen.append(line)
        return self.seen


def start(ws: Workspace, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``zeroshot ARGS`` in its own process group, as a shell runs a foreground job."""
    return subprocess.Popen(
        [*ZEROSHOT, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ws.root,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )


def zeroshot(
    ws: Workspace, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ZEROSHOT, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ws.root,
        env={**os.environ, **(env or {})},
    )


def write(ws: Workspace, scenario: tuple[dict[str, Any], dict[str, Any]]) -> list[str]:
    """The graph and plan as files; returns the ``run`` arguments naming them."""
    graph, runtime = scenario
    (ws.root / "graph.json").write_text(json.dumps(graph))
    (ws.root / "plan.json").write_text(json.dumps(runtime))
    return ["graph.json", "--input", '{"value": 3}', "--runtime", "@plan.json"]


def test_ctrl_c_detaches_an_attached_run_which_then_finishes(ws: Workspace) -> None:
    ws.behave(work={"wait_for_file": GATE})
    attached = start(
        ws, "run", *write(ws, g.single_step_graph("inc")), "--ledger", str(ws.ledger_path)
    )
    assert attached.stdout and attached.stderr
    output = Lines(attached.stdout)
    run_id = output.until(r"^started (run-\S+) \(Ctrl-C detaches")[1]
    output.until(r"started   work#1$")

    os.killpg(attached.pid, signal.SIGINT)  # what Ctrl-C does to the foreground job

    assert attached.wait(TIMEOUT_S) == 130
    message = attached.stderr.read()
    found = re.search(
        rf"detached from {run_id}; it keeps running\. Reattach with: "
        rf"zeroshot watch {run_id} --cursor (v2:\d+)",
        message,
    )
    assert found, message
    run = ws.client.run(run_id)
    assert run.status().status.phase == "running"
    assert alive(controller_pid(ws.client, run_id))

    # The printed command reattaches after the last event shown, and follows to the end.
    (ws.root / GATE).touch()
    watched = zeroshot(ws, "watch", run_id, "--cursor", found[1], "--ledger", str(ws.ledger_path))
    assert watched.returncode == 0, watched.stdout + watched.stderr
    cursors = [int(line.split()[0][3:]) for line in watched.stdout.splitlines()]
    assert cursors and min(cursors) == int(found[1][3:]) + 1
    assert watched.stdout.splitlines()[-1].endswith('finished  succeeded: {"value": 4}')
    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 4}}


BLOCKED_FOLLOWER = """
import time
import typer
from zeroshot_kernel.console.follow import follow

def lines():
    yield "v2:7  started   work#1", "v2:7"
    time.sleep(3600)  # a ledger read that never returns (a busy lock, a stalled server)

try:
    follow(lines(), lambda last: f"detached after {last}")
except typer.Exit as ended:
    raise SystemExit(ended.exit_code)
"""


def test_ctrl_c_detaches_at_once_while_the_ledger_read_is_stuck(tmp_path: Path) -> None:
    """Ctrl-C is a flag the printing thread checks while it waits: a read that does not
    return (the follower reads on a thread of its own) cannot delay or swallow it."""
    follower = subprocess.Popen(
        [sys.executable, "-c", BLOCKED_FOLLOWER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )
    assert follower.stdout and follower.stderr
    Lines(follower.stdout).until(r"^v2:7  started   work#1$")
    pressed = time.monotonic()
    os.killpg(follower.pid, signal.SIGINT)
    assert follower.wait(TIMEOUT_S) == 130
    assert time.monotonic() - pressed < 5
    assert follower.stderr.read() == "detached after v2:7\n"


def test_logs_follow_to_the_end_and_cursor_starts_after_a_line(ws: Workspace) -> None:
    ws.behave(work={"lines": ["one", "two"], "wait_for_file": GATE, "after": ["three"]})
    ledger = ["--ledger", str(ws.ledger_path)]
    started = zeroshot(
        ws, "run", *write(ws, g.single_step_graph("talk")), "--detach", "--json", *ledger
    )
    run_id = json.loads(started.stdout)["runId"]

    following = start(ws, "logs", run_id, "-f", *ledger)
    assert following.stdout
    output = Lines(following.stdout)
    output.until(r"\[output\] two$")
    assert following.poll() is None  # the run is gated: nothing can have ended it
    (ws.root / GATE).touch()
    assert following.wait(TIMEOUT_S) == 0
    lines = output.rest()
    assert [line.split(None, 1)[1] for line in lines] == [
        "[output] one",
        "[output] two",
        "[output] three",
    ]
    assert wire(finish(ws.client.run(run_id))) == {"status": "succeeded", "output": {"value": 4}}

    first = lines[0].split()[0]
    after_first = zeroshot(ws, "logs", run_id, "--cursor", first, "--json", *ledger)
    records = [json.loads(line) for line in after_first.stdout.splitlines()]
    assert [record["line"] for record in records] == ["two", "three"]
    assert [record["cursor"] for record in records] == [line.split()[0] for line in lines[1:]]
    last = lines[-1].split()[0]
    assert zeroshot(ws, "logs", run_id, "--cursor", last, *ledger).stdout == ""


def test_title_is_listed_and_zeroshot_ledger_selects_the_ledger(
    ws: Workspace, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere" / "runs.db"
    env = {"ZEROSHOT_LEDGER": str(elsewhere)}
    ran = zeroshot(ws, "run", *write(ws, g.seq_graph()), "--title", "Nightly check", env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    run_id = ran.stdout.split()[1]

    listed = zeroshot(ws, "list", env=env)
    [row] = listed.stdout.splitlines()
    assert row.startswith(run_id) and "Nightly check" in row and "succeeded" in row

    # The run is in the ledger the variable named, not in the workspace's default one,
    # and --ledger still wins over the variable.
    assert [(r.run_id, r.title) for r in Client(elsewhere).runs()] == [(run_id, "Nightly check")]
    assert ws.client.runs() == []
    default = zeroshot(ws, "list", "--ledger", str(ws.ledger_path), env=env)
    assert default.stdout.startswith("no runs in")
