"""The study hold: one run researches a study at a time, in this process or another.

Real ``fcntl`` locks on real files; the other holder is a real subprocess (killed with
SIGKILL to show the kernel drops its lock and its stale holder file is ignored).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import wait_until
from workbench_support import FAST_TASK, fast_task

from zeroshot_kernel.auto_research.lock_files import LOCKS_DIR
from zeroshot_kernel.auto_research.studies import run_lock
from zeroshot_kernel.auto_research.studies.run_lock import (
    StudyBusy,
    await_release,
    hold_study,
    release_run,
    study_holder,
)
from zeroshot_kernel.client import Client
from zeroshot_kernel.exceptions import Refused
from zeroshot_kernel.templates import TemplateOptions, expand_template

HOLDER = (
    "import sys\n"
    "from zeroshot_kernel.auto_research.studies.run_lock import hold_study\n"
    "hold_study(sys.argv[1], 'shared', 'run-elsewhere')\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


def start_holder(workspace: Path) -> subprocess.Popen[str]:
    """Another process holding the study ``shared`` for ``run-elsewhere``; it lets go when
    its stdin closes (or it is killed)."""
    other = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert other.stdout is not None and other.stdout.readline() == "held\n"
    return other


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    for run in ("run-one", "run-two", "run-three"):
        release_run(run)


def test_one_run_holds_a_study_until_it_lets_go(workspace: Path) -> None:
    hold_study(workspace, "shared", "run-one")
    hold_study(workspace, "shared", "run-one")  # again: the same run keeps it
    assert study_holder(workspace, "shared") == "run-one"
    with pytest.raises(StudyBusy, match="study 'shared' is being researched by run run-one"):
        hold_study(workspace, "shared", "run-two")
    assert issubclass(StudyBusy, Refused)  # a refusal, not a crash, for the node
    hold_study(workspace, "other", "run-two")  # another study is free

    holder = workspace / LOCKS_DIR / "study-shared.holder.json"
    assert json.loads(holder.read_text())["runId"] == "run-one"
    release_run("run-one")
    assert not holder.exists() and study_holder(workspace, "shared") is None
    hold_study(workspace, "shared", "run-two")
    assert study_holder(workspace, "shared") == "run-two"


def test_a_hold_in_another_process_refuses_until_that_process_dies(workspace: Path) -> None:
    other = start_holder(workspace)
    try:
        assert study_holder(workspace, "shared") == "run-elsewhere"
        with pytest.raises(StudyBusy, match="by run run-elsewhere"):
            hold_study(workspace, "shared", "run-one")
    finally:
        os.kill(other.pid, signal.SIGKILL)
        other.wait(timeout=30)
    # its holder file stays behind, naming a process that is provably gone
    holder = workspace / LOCKS_DIR / "study-shared.holder.json"
    assert json.loads(holder.read_text())["runId"] == "run-elsewhere"
    assert study_holder(workspace, "shared") is None
    hold_study(workspace, "shared", "run-one")  # the kernel dropped the dead one's lock
    assert study_holder(workspace, "shared") == "run-one"


def test_a_submission_waits_for_a_holder_that_is_letting_go(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Continue pressed the moment a stopped run closed: its controller still holds the
    study for a moment; the submission waits for it instead of refusing."""
    other = start_holder(workspace)
    seen_held = threading.Event()
    holder_now = run_lock._holder_now

    def observed(*paths: Path) -> str | None:
        holder = holder_now(*paths)
        if holder is not None:
            seen_held.set()
        return holder

    monkeypatch.setattr(run_lock, "_holder_now", observed)
    outcome: list[str | None] = []
    waiter = threading.Thread(target=lambda: outcome.append(await_release(workspace, "shared")))
    waiter.start()
    try:
        assert seen_held.wait(30), "the first look should find the study held"
    finally:
        assert other.stdin is not None
        other.stdin.close()  # the holder ends, and the kernel drops its lock
        other.wait(timeout=30)
    waiter.join(timeout=30)
    assert outcome == [None]
    hold_study(workspace, "shared", "run-one")
    assert study_holder(workspace, "shared") == "run-one"


def test_a_holder_on_another_host_counts_only_while_its_lock_is_held(workspace: Path) -> None:
    """Nothing proves another host's process gone, so its holder file is believed only
    while the lock is held (a workspace shared between machines)."""
    holder = workspace / LOCKS_DIR / "study-shared.holder.json"
    holder.parent.mkdir(parents=True)
    elsewhere = {"runId": "run-elsewhere", "owner": "another-host:4242:99:abcd1234"}
    holder.write_text(json.dumps(elsewhere))
    assert study_holder(workspace, "shared") is None  # no lock: it died there
    other = start_holder(workspace)
    try:
        holder.write_text(json.dumps(elsewhere))  # as if that host's controller held it
        assert study_holder(workspace, "shared") == "run-elsewhere"
    finally:
        os.kill(other.pid, signal.SIGKILL)
        other.wait(timeout=30)


@pytest.mark.parametrize("content", ["garbage", "fifo", "huge", "wrong-types"])
def test_a_damaged_holder_file_is_ignored_without_hanging(workspace: Path, content: str) -> None:
    holder = workspace / LOCKS_DIR / "study-shared.holder.json"
    holder.parent.mkdir(parents=True)
    if content == "fifo":
        os.mkfifo(holder)  # opening it for reading must not wait for a writer
    elif content == "huge":
        holder.write_text(json.dumps({"runId": "x" * 10_000, "owner": "h:1:2:3"}))
    elif content == "wrong-types":
        holder.write_text(json.dumps({"runId": 7, "owner": ["h"]}))
    else:
        holder.write_bytes(b"\xff\x00 not json")
    assert study_holder(workspace, "shared") is None


def test_a_run_in_this_process_lets_go_of_its_study_when_its_controller_ends(
    tmp_path: Path,
) -> None:
    """A controller on a thread of this process (as for notebook-defined workers): the
    next run on the study, in the same process, is not refused by the one that ended."""
    workspace = fast_task(tmp_path)
    client = Client(workspace=str(workspace))
    expansion = expand_template("auto-research", TemplateOptions(task=FAST_TASK, iterations=1))
    for _ in range(2):
        run = client.submit(
            expansion.graph, input=expansion.input, runtime=expansion.runtime, in_process=True
        )
        assert run.result(timeout=300).status == "succeeded"
        wait_until(lambda: study_holder(workspace, FAST_TASK) is None, 30, "the hold to go")
