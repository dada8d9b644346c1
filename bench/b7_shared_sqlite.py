"""B7: two writers and a reader on one SQLite file for a fixed time, ours against optuna.

Ours: two runs of a long sequential graph, each driven by its own detached controller
process (python workers in pooled processes), while this process polls the ledger as a
monitor does (``snapshot_and_tail`` after its cursor). After the time is up both runs are
stopped. The peer: two processes running ``study.optimize`` on one optuna ``RDBStorage``
SQLite file (the documented way to share a study), a third polling ``get_trials``.
Counted: "database is locked" errors (and any other error) in writers and readers, how
much each writer got done, and how long a read took while the writers wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from bench.b1_step_overhead import PAYLOAD, graph, runtime
from bench.harness import Report, require, versions
from zeroshot_kernel.client import Client, Run
from zeroshot_kernel.engine.launch import controller_log

SECONDS = 60.0
STEPS = 2_000
POLL_S = 0.05
LOCKED = "database is locked"


def ours(directory: Path, seconds: float) -> dict[str, Any]:
    (directory / ".zeroshot").mkdir(parents=True)
    # the detached controllers and their workers import bench.workers from the project
    project = str(Path(__file__).resolve().parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (project, os.environ.get("PYTHONPATH")) if p
    )
    client = Client(directory / ".zeroshot" / "ledger.db", workspace=str(directory))

    def writer(number: int) -> Run:
        return client.submit(
            graph(STEPS),
            input={"payload": PAYLOAD},
            runtime=runtime(STEPS),
            title=f"b7 writer {number}",
        )

    live = [writer(1), writer(2)]
    done: list[Run] = []
    reads, errors, cursors = [], [], {run.id: None for run in live}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for slot, run in enumerate(live):
            started = time.perf_counter()
            try:
                snapshot, _ = client.ledger.snapshot_and_tail(run.id, cursors.get(run.id))
                cursors[run.id] = snapshot.cursor
            except Exception as problem:  # counted, not fatal: this is what is measured
                errors.append(str(problem))
                continue
            reads.append(time.perf_counter() - started)
            if snapshot.terminal is not None:  # keep two writers busy until the time is up
                done.append(run)
                live[slot] = writer(len(done) + 2)
        time.sleep(POLL_S)
    for run in live:
        run.stop()
    for run in live:
        run.wait(timeout=60)
    runs = done + live
    steps = sum(len(client.ledger.snapshot(run.id).executions) for run in runs)
    logs = "".join(controller_log(directory, run.id).read_text(errors="replace") for run in runs)
    return {
        "writer work": f"{steps} steps in {len(runs)} runs",
        "writer errors": logs.count("Traceback"),
        "locked": logs.count(LOCKED) + sum(LOCKED in e for e in errors),
        "reader errors": len(errors),
        "reads": reads,
    }


OPTUNA_WRITER = textwrap.dedent("""
    import json, sys, time, optuna
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    storage, seconds = sys.argv[1], float(sys.argv[2])
    study = optuna.load_study(study_name="b7", storage=storage)
    deadline, trials, errors, locked = time.monotonic() + seconds, 0, 0, 0
    while time.monotonic() < deadline:
        try:
            study.optimize(lambda t: t.suggest_float("x", -5, 5) ** 2, n_trials=1)
            trials += 1
        except Exception as problem:
            errors += 1
            locked += "database is locked" in str(problem)
    print(json.dumps({"trials": trials, "errors": errors, "locked": locked}))
""")

OPTUNA_READER = textwrap.dedent("""
    import json, sys, time, optuna
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    storage, seconds, poll = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    study = optuna.load_study(study_name="b7", storage=storage)
    deadline, reads, errors, locked = time.monotonic() + seconds, [], 0, 0
    while time.monotonic() < deadline:
        started = time.perf_counter()
        try:
            study.get_trials(deepcopy=False)
        except Exception as problem:
            errors += 1
            locked += "database is locked" in str(problem)
        reads.append(time.perf_counter() - started)
        time.sleep(poll)
    print(json.dumps({"reads": reads, "errors": errors, "locked": locked}))
""")


def optuna_peer(directory: Path, seconds: float) -> dict[str, Any]:
    import optuna

    storage = f"sqlite:///{directory / 'optuna.db'}"
    optuna.create_study(study_name="b7", storage=storage)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", OPTUNA_WRITER, storage, str(seconds)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in (1, 2)
    ]
    reader = subprocess.Popen(
        [sys.executable, "-c", OPTUNA_READER, storage, str(seconds), str(POLL_S)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    done = [json.loads(process.communicate(timeout=seconds + 120)[0]) for process in writers]
    read = json.loads(reader.communicate(timeout=seconds + 120)[0])
    return {
        "writer work": f"{sum(d['trials'] for d in done)} trials "
        f"({' + '.join(str(d['trials']) for d in done)})",
        "writer errors": sum(d["errors"] for d in done),
        "locked": sum(d["locked"] for d in done) + read["locked"],
        "reader errors": read["errors"],
        "reads": read["reads"],
    }


def run(repeats: int) -> Report:
    require("optuna")
    seconds = SECONDS if repeats > 1 else SECONDS / 4
    report = Report("B7", f"two writers and a reader on one SQLite file for {seconds:.0f} s")
    report.versions = versions(["zeroshot-workbench", "sqlalchemy", "optuna"])
    rows, ours_locked = [], None
    for name, case in (
        ("ours: two controllers + a monitor", ours),
        ("optuna RDBStorage: two workers + a reader", optuna_peer),
    ):
        directory = Path(tempfile.mkdtemp(prefix="zeroshot-b7-"))
        try:
            result = case(directory, seconds)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        reads = sorted(result["reads"])
        p99 = reads[int(0.99 * (len(reads) - 1))] if reads else float("nan")
        rows.append(
            [
                name,
                result["writer work"],
                str(result["writer errors"]),
                str(result["reader errors"]),
                str(result["locked"]),
                f"{statistics.median(reads) * 1e3:.1f}" if reads else "-",
                f"{p99 * 1e3:.1f}",
            ]
        )
        ours_locked = result["locked"] if ours_locked is None else ours_locked
    report.table(
        [
            "case",
            "writers' work",
            "writer errors",
            "reader errors",
            f'"{LOCKED}"',
            "read ms (median)",
            "read ms (p99)",
        ],
        rows,
    )
    report.table(
        ["bar", "verdict"],
        [
            [f'0 "{LOCKED}" errors for us', "met" if ours_locked == 0 else "**missed**"],
        ],
    )
    report.notes += [
        f"One sample of each case, {seconds:.0f} s each, one after the other (the peers' "
        "workloads differ: what compares is errors and read latency under two writers).",
        f"Ours: {STEPS}-step sequential graphs of no-op python workers, each run by its own "
        "detached controller, a new one submitted whenever one finishes so that two write "
        f"throughout; the monitor reads both runs every {POLL_S * 1e3:.0f} ms. Writer errors "
        "are tracebacks in the controllers' logs.",
        "Optuna: each worker runs one trial per optimize call so that an error ends only that "
        "call; its reader polls get_trials at the same interval.",
    ]
    return report
