"""Inputs that pass every count yet stand for gigabytes, or that the ledger cannot hold,
through the real ``zeroshot`` command: each is refused in one line (or the documented
diagnostic), within seconds and 1 GiB of address space, before anything is written.

Limits are counted in bytes after expansion (a YAML alias repeats its anchored node's
bytes, not one value), sizes are computed before anything is built (a grid's cross
product is multiplied out first), and admission refuses an input no controller could
record (each step's ``node_started`` event records its input).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cli_hostile_input import refused, rejected, zeroshot

from zeroshot_kernel.batch import create_batch
from zeroshot_kernel.batch.parameters import MAX_SETS
from zeroshot_kernel.client import Client
from zeroshot_kernel.contract.reading import MAX_DOCUMENT_BYTES
from zeroshot_kernel.ledger.events import MAX_INPUT_BYTES

# slow: a real zeroshot process per case, bounded in time and memory
pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
QUICK_S = 20
"""A refusal takes about a second alone; this leaves room for a busy 2-core machine (the
bombs took 33-53 s and 6 GB before they were counted in bytes)."""


def quickly(
    folder: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``zeroshot ARGS`` in ``folder`` (1 GiB of address space, no traceback), timed."""
    started = time.monotonic()
    ran = zeroshot(folder, *args, env=env)
    assert time.monotonic() - started < QUICK_S, args[:2]
    return ran


def string_bomb(folder: Path, copies: int = 20_000) -> Path:
    """A 3 MiB string anchored once and aliased ``copies`` times: a 3.2 MB file (under the
    4 MiB limit, 20,000 aliases under the value limit) that stands for 60 GB."""
    path = folder / "bomb.yaml"
    with path.open("w") as out:
        out.write('topic: &big "' + "a" * (3 * 1024 * 1024) + '"\ncopies:\n')
        out.write("  - *big\n" * copies)
    assert path.stat().st_size < MAX_DOCUMENT_BYTES
    return path


def workspace(tmp_path: Path) -> Path:
    """A workspace holding the example graph and its python workers."""
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    (tmp_path / ".zeroshot").mkdir()
    return tmp_path


def nothing_recorded(folder: Path) -> None:
    assert not (folder / ".zeroshot" / "ledger.db").exists()
    assert not (folder / "batch-output").exists()


def test_an_aliased_string_bomb_is_refused_as_a_graph(tmp_path: Path) -> None:
    bomb = string_bomb(tmp_path)
    words = f"YAML aliases expand the document past the {MAX_DOCUMENT_BYTES:,}-byte limit"
    for command in (["validate"], ["run", "--detach"]):  # run rejects it as validate does
        rejected(quickly(tmp_path, command[0], str(bomb), *command[1:]), words)
    nothing_recorded(tmp_path)


def test_an_aliased_string_bomb_is_refused_as_an_input(tmp_path: Path) -> None:
    folder = workspace(tmp_path)
    bomb = string_bomb(folder)
    graph = str(folder / "examples" / "headline.yaml")
    words = "YAML aliases expand the document past"
    for command in ("validate", "run"):
        ran = quickly(folder, command, graph, "--input", f"@{bomb}")
        assert refused(ran, words).startswith("error: --input: ")
    nothing_recorded(folder)


def test_an_alias_inside_its_own_anchor_is_a_cycle_not_a_number(tmp_path: Path) -> None:
    cyclic = tmp_path / "cycle.yaml"
    cyclic.write_text("root: &r {children: [*r]}\n")
    rejected(quickly(tmp_path, "validate", str(cyclic)), "refers to a node that contains it")


def test_a_few_aliases_of_a_large_string_are_still_read(tmp_path: Path) -> None:
    """The byte count refuses what expands past the limit, not aliases as such."""
    folder = workspace(tmp_path)
    document = folder / "input.yaml"
    document.write_text('topic: &t "' + "a" * 1_000_000 + '"\nnotes: [*t, *t]\n')
    graph = str(folder / "examples" / "headline.yaml")
    ran = quickly(folder, "validate", graph, "--input", f"@{document}")
    # Read whole (3 MB once expanded), then checked against the graph's initialInput.
    assert ran.returncode == 1 and "notes" in ran.stdout and not ran.stderr, ran.stdout[-500:]


def test_a_grid_is_multiplied_out_before_it_is_built(tmp_path: Path) -> None:
    """Ten lists of ten in 380 bytes: 10^10 sets, refused before one is built."""
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({f"p{n}": list(range(10)) for n in range(10)}))
    assert grid.stat().st_size < 400
    notebook = tmp_path / "n.ipynb"
    notebook.write_text("{}")
    ran = quickly(tmp_path, "batch", "run", str(notebook), "--grid", str(grid))
    refused(ran, f"multiply to more than {MAX_SETS:,} parameter sets")
    nothing_recorded(tmp_path)


def test_a_csv_with_too_many_rows_is_refused_without_reading_them_all(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("x\n" + "1\n" * (MAX_DOCUMENT_BYTES // 2 - 4))  # two million rows
    notebook = tmp_path / "n.ipynb"
    notebook.write_text("{}")
    ran = quickly(tmp_path, "batch", "run", str(notebook), "--csv", str(rows))
    refused(ran, f"more than {MAX_SETS:,} parameter sets")
    nothing_recorded(tmp_path)


def test_a_csv_header_naming_a_column_twice_is_refused(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("x,y,x\n1,2,3\n")
    notebook = tmp_path / "n.ipynb"
    notebook.write_text("{}")
    ran = quickly(tmp_path, "batch", "run", str(notebook), "--csv", str(rows))
    refused(ran, "the header names x twice")
    nothing_recorded(tmp_path)


def test_an_input_no_event_could_record_is_rejected_by_admission(tmp_path: Path) -> None:
    """1.5 MB is under the 2 MiB submission limit, but the first step's node_started event
    would be 1.5 MB: the run would be admitted and no controller could ever start it. So
    admission rejects it, and ``validate`` says so before anyone tries to run it."""
    folder = workspace(tmp_path)
    document = folder / "input.json"
    document.write_text(json.dumps({"topic": "a" * 1_500_000}))
    graph = str(folder / "examples" / "headline.yaml")
    plan = f"@{folder / 'examples' / 'headline-runtime.json'}"
    for command in (["run"], ["run", "--validate-only"], ["validate"]):
        ran = quickly(folder, *command, graph, "--input", f"@{document}", "--runtime", plan)
        assert ran.returncode == 1, (command, ran.stdout[-500:], ran.stderr[-500:])
        assert ran.stdout.startswith("error: ceiling_exceeded at input"), ran.stdout[-500:]
        assert f"a run records at most {MAX_INPUT_BYTES:,}" in ran.stdout
    assert not (folder / ".zeroshot" / "ledger.db").exists()


def test_the_largest_admitted_input_runs_to_the_end(tmp_path: Path) -> None:
    """The limit leaves room for the event's envelope: an input just under it is recorded
    in every event of the run, which finishes."""
    folder = workspace(tmp_path)
    document = folder / "input.json"
    padding = MAX_INPUT_BYTES - len(json.dumps({"topic": ""}))
    document.write_text(json.dumps({"topic": "a" * padding}))
    ran = quickly(
        folder,
        "run",
        str(folder / "examples" / "headline.yaml"),
        "--input",
        f"@{document}",
        "--runtime",
        f"@{folder / 'examples' / 'headline-runtime.json'}",
    )
    assert ran.returncode == 0, ran.stderr[-1000:]
    assert ran.stdout.splitlines()[-1].startswith("    v2:"), ran.stdout[-300:]
    assert "finished  succeeded" in ran.stdout


def test_a_ledger_that_is_not_text_or_too_long_is_named_in_one_line(tmp_path: Path) -> None:
    not_text = quickly(tmp_path, "list", env={"ZEROSHOT_LEDGER": "/tmp/\udcff\udcfe.db"})
    refused(not_text, "ZEROSHOT_LEDGER /tmp/\\udcff\\udcfe.db is not valid UTF-8 text")
    long_name = "a" * 5000
    for ledger in (long_name, f"sqlite:///{tmp_path}/{long_name}"):
        too_long = quickly(tmp_path, "list", "--ledger", ledger)
        refused(too_long, "the database file cannot be used (File name too long)")
    assert list(tmp_path.iterdir()) == []


RESEARCH = ("research", "run", "rosenbrock", "--iterations", "1", "--detach")
STUDY_LOCKS = Path(".zeroshot") / "locks"


def research_workspace(folder: Path) -> Path:
    (folder / ".zeroshot").mkdir(parents=True)
    return folder


def test_a_locks_folder_that_is_a_file_is_named_in_one_line(tmp_path: Path) -> None:
    folder = research_workspace(tmp_path)
    (folder / STUDY_LOCKS).write_text("")
    line = refused(quickly(folder, *RESEARCH), f"{folder / STUDY_LOCKS} is not a folder")
    assert "Nothing was started" in line
    assert sorted(p.name for p in (folder / ".zeroshot").iterdir()) == ["locks"]


def test_a_study_lock_linked_outside_creates_nothing_there(tmp_path: Path) -> None:
    folder = research_workspace(tmp_path / "ws")
    (folder / STUDY_LOCKS).mkdir(parents=True)
    outside = tmp_path / "outside.lock"
    (folder / STUDY_LOCKS / "study-rosenbrock.run.lock").symlink_to(outside)
    refused(quickly(folder, *RESEARCH), "study-rosenbrock.run.lock is a symbolic link")
    assert not outside.exists() and not (folder / ".zeroshot" / "research").exists()


def test_a_forged_study_holder_neither_fakes_a_line_nor_blocks_the_study(
    tmp_path: Path,
) -> None:
    """A holder file is believed only while another process holds the study's lock, and
    the refusal names it; a forged one (a live process that is no controller, a run id
    holding a newline) with the lock free blocks nothing and is never printed."""
    folder = research_workspace(tmp_path)
    locks = folder / STUDY_LOCKS
    locks.mkdir()
    holder = locks / "study-rosenbrock.holder.json"
    holder.write_text(json.dumps({"runId": "run-elsewhere", "owner": "h:1:2:abcd1234"}))
    locker = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(locks / "study-rosenbrock.run.lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout and locker.stdout.readline() == "held\n"
        busy = quickly(folder, *RESEARCH)
    finally:
        locker.kill()
        locker.wait(30)
    line = refused(busy, "is being researched by run run-elsewhere")
    assert str(holder) in line and "Nothing was started" in line

    ticks = Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()[19]
    owner = f"{socket.gethostname()}:{os.getpid()}:{ticks}:abcd1234"
    holder.write_text(json.dumps({"runId": "run-x\nerror: forged", "owner": owner}))
    started = quickly(folder, *RESEARCH)
    assert started.returncode == 0, started.stderr
    assert "forged" not in started.stdout + started.stderr
    run_id = started.stdout.split(":", 1)[0].removeprefix("started ")
    assert quickly(folder, "stop", run_id).returncode == 0
    assert Client(workspace=str(folder)).run(run_id).wait(60) is not None


HOLD_LOCK = (
    "import fcntl, sys\n"
    "lock = open(sys.argv[1], 'a')\n"
    "fcntl.flock(lock, fcntl.LOCK_EX)\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)
"""Another process holding a lock file until its stdin closes (or it is killed)."""


def notebook(folder: Path) -> Path:
    path = folder / "n.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}))
    return path


def test_a_malformed_scheduler_address_is_refused_before_the_batch_is_recorded(
    tmp_path: Path,
) -> None:
    folder = research_workspace(tmp_path)
    for address, words in (
        ("not a url", "missing port number"),
        ("foo://host:1", "unknown address scheme 'foo'"),
        ("tcp://127.0.0.1:99999", "port 99999 is not 1-65535"),
    ):
        ran = quickly(
            folder, "batch", "run", str(notebook(folder)), "-p", "x", "1", "--dask", address
        )
        assert refused(ran, words).startswith(f"error: --dask {address}: ")
    nothing_recorded(folder)


def test_a_megabyte_parameter_value_is_shown_cut(tmp_path: Path) -> None:
    """``batch status`` shows each item's parameters on one line of bounded length (the
    value is data: ``--json`` has it whole)."""
    folder = research_workspace(tmp_path)
    ledger = str(folder / "batches.db")
    created = create_batch(
        notebook(folder),
        [{"text": "v" * 3_000_000}],
        output_dir=folder / "out",
        ledger=ledger,
        allow_outside_workspace=True,  # this process works in the repository
    )
    shown = quickly(folder, "batch", "status", created.batch_id, "--ledger", ledger)
    assert shown.returncode == 0, shown.stderr
    assert len(shown.stdout) < 2000 and '{"text": "vvvv' in shown.stdout and "…" in shown.stdout
    whole = quickly(folder, "batch", "status", created.batch_id, "--ledger", ledger, "--json")
    [item] = json.loads(whole.stdout)["items"]
    assert item["parameters"] == {"text": "v" * 3_000_000}
