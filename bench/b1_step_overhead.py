"""B1: durable per-step overhead, a 500-step sequential graph of no-op workers.

Three cases on the same machine, alternated: our engine end to end (the real controller,
in-process, with in-process python workers and the SQLite ledger: every step a durable
``node_started`` and ``node_completed`` append); LangGraph with ``SqliteSaver`` and
``durability="sync"`` (a checkpoint written before each next step); and raw SQLite, two
WAL commits of the same payload per step, as the floor. All three keep SQLite's defaults
for WAL (``synchronous=FULL``): every commit is an fsync. Each step carries the same ~1 KB
state. Bytes per step are the database file's growth over the run.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.harness import (
    PeerMissing,
    Report,
    Summary,
    alternate,
    ratios,
    require,
    timed,
    verdict,
    versions,
)
from zeroshot_kernel.admission.admit import admit
from zeroshot_kernel.engine.controller import Controller
from zeroshot_kernel.ledger import Ledger

STEPS = 500
PAYLOAD = "x" * 1000
"""The state every step carries (and every case stores): about 1 KB."""
BARS = {"langgraph": 0.25, "raw": 5.0, "bytes": 0.1}
PEERS = ["langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite"]


def graph(steps: int) -> dict[str, Any]:
    """``steps`` no-op steps in one seq; each gets the payload as input."""
    text = {"kind": "string"}
    state = {"kind": "record", "fields": {"payload": {"type": text, "required": True}}}

    def step(index: int) -> dict[str, Any]:
        return {
            "kind": "step",
            "name": f"s{index}",
            "worker": "bench.noop@1",
            "input": state,
            "output": {"kind": "null"},
            "inputBindings": [
                {"target": ["payload"], "value": {"source": "state", "path": ["payload"]}}
            ],
            "writeBindings": [],
            "timeoutMs": 60_000,
            "attempts": 1,
        }

    done = {"kind": "succeed", "name": "done", "output": {"kind": "null"}, "bindings": []}
    return {
        "profile": "openengine.graph.full/v1",
        "initialInput": state,
        "policy": {"policy": "policy.bench@1", "default": "deny"},
        "root": {
            "kind": "seq",
            "name": "root",
            "state": state,
            "children": [*(step(i) for i in range(steps)), done],
            "promotedStatePaths": [],
        },
    }


def runtime(steps: int) -> dict[str, Any]:
    binding = {"kind": "agent", "callable": "bench.workers:noop"}
    return {"harness": "python", "nodes": {f"s{i}": binding for i in range(steps)}}


def file_bytes(path: Path) -> int:
    """The database's size once its WAL is checkpointed (every connection closed)."""
    return path.stat().st_size


class Case:
    """One contender: ``sample()`` runs the whole graph once in a fresh directory and
    returns seconds per step; ``bytes`` collects the database growth per step and ``cpu``
    this process's CPU seconds per step over the same run."""

    def __init__(self) -> None:
        self.bytes: list[float] = []
        self.cpu: list[float] = []

    def sample(self) -> float:
        directory = Path(tempfile.mkdtemp(prefix="zeroshot-b1-"))
        try:
            cpu = time.process_time()
            elapsed = self.run(directory)
            self.cpu.append((time.process_time() - cpu) / STEPS)
            return elapsed / STEPS
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def run(self, directory: Path) -> float:
        raise NotImplementedError


class Ours(Case):
    def __init__(self) -> None:
        super().__init__()
        admission = admit(graph(STEPS), initial_input={"payload": PAYLOAD}, runtime=runtime(STEPS))
        if admission.admitted is None:
            raise AssertionError(f"the B1 graph is not admitted: {admission.diagnostics}")
        self.admitted = admission.admitted.to_wire()

    def run(self, directory: Path) -> float:
        database = directory / "ledger.db"
        url = f"sqlite:///{database}"
        with Ledger(url) as ledger:
            run_id = ledger.create_run(self.admitted, title="b1")
        before = file_bytes(database)
        with Ledger(url) as ledger:
            controller = Controller(ledger, run_id, workspace=directory, in_process=True)
            result: list[Any] = []
            elapsed = timed(lambda: result.append(asyncio.run(controller.run())))
        if result[0] is None or result[0].status != "succeeded":
            raise AssertionError(f"the B1 run did not succeed: {result[0]}")
        self.bytes.append((file_bytes(database) - before) / STEPS)
        return elapsed


class LangGraph(Case):
    def __init__(self) -> None:
        super().__init__()
        for module in ("langgraph.graph", "langgraph.checkpoint.sqlite"):
            require(module)
        from typing import TypedDict

        from langgraph.graph import END, START, StateGraph

        class State(TypedDict):
            payload: str

        def noop(state: State) -> dict[str, Any]:
            return {}

        builder = StateGraph(State)
        for index in range(STEPS):
            builder.add_node(f"s{index}", noop)
        builder.add_edge(START, "s0")
        for index in range(STEPS - 1):
            builder.add_edge(f"s{index}", f"s{index + 1}")
        builder.add_edge(f"s{STEPS - 1}", END)
        self.builder = builder

    def run(self, directory: Path) -> float:
        from langgraph.checkpoint.sqlite import SqliteSaver

        database = directory / "langgraph.db"
        connection = sqlite3.connect(database, check_same_thread=False)
        SqliteSaver(connection).setup()
        connection.close()
        before = file_bytes(database)
        connection = sqlite3.connect(database, check_same_thread=False)
        try:
            app = self.builder.compile(checkpointer=SqliteSaver(connection))
            config: Any = {"configurable": {"thread_id": "b1"}, "recursion_limit": STEPS + 10}
            elapsed = timed(lambda: app.invoke({"payload": PAYLOAD}, config, durability="sync"))
        finally:
            connection.close()
        self.bytes.append((file_bytes(database) - before) / STEPS)
        return elapsed


class RawSqlite(Case):
    """The floor: per step, one commit of a ~1.3 KB row and one of a ~0.3 KB row."""

    STARTED = '{"kind":"node_started","input":{"payload":"' + PAYLOAD + '"},' + "r" * 250 + "}"
    COMPLETED = '{"kind":"node_completed",' + "c" * 250 + "}"

    def run(self, directory: Path) -> float:
        database = directory / "raw.db"
        connection = sqlite3.connect(database, isolation_level=None)
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute(
            "CREATE TABLE events (run_id TEXT NOT NULL, sequence INTEGER NOT NULL, "
            "event_json TEXT NOT NULL, PRIMARY KEY (run_id, sequence))"
        )
        connection.close()
        before = file_bytes(database)
        connection = sqlite3.connect(database, isolation_level=None)
        insert = "INSERT INTO events VALUES ('run', ?, ?)"

        def steps() -> None:
            for index in range(STEPS):
                for offset, document in ((0, self.STARTED), (1, self.COMPLETED)):
                    connection.execute("BEGIN IMMEDIATE")
                    connection.execute(insert, (2 * index + offset, document))
                    connection.execute("COMMIT")

        try:
            elapsed = timed(steps)
        finally:
            connection.close()
        self.bytes.append((file_bytes(database) - before) / STEPS)
        return elapsed


def run(repeats: int) -> Report:
    report = Report("B1", f"durable per-step overhead ({STEPS}-step sequential graph)")
    report.versions = versions(["zeroshot-workbench", "sqlalchemy", "pydantic", *PEERS])
    cases: dict[str, Case] = {"ours": Ours(), "raw": RawSqlite()}
    try:
        cases["langgraph"] = LangGraph()
    except PeerMissing as missing:
        report.notes.append(f"LangGraph not measured: {missing}; its ratios are not reported.")
    for case in cases.values():  # warm-up: imports, caches, first-run costs
        case.sample()
        case.bytes.clear()
        case.cpu.clear()
    samples = alternate({name: case.sample for name, case in cases.items()}, repeats)
    per_step = {name: Summary.of(values) for name, values in samples.items()}
    per_byte = {name: Summary.of(case.bytes) for name, case in cases.items()}
    per_cpu = {name: Summary.of(case.cpu) for name, case in cases.items()}
    labels = {
        "ours": "ours (controller + SQLite ledger, in-process workers)",
        "langgraph": "LangGraph + SqliteSaver, durability=sync",
        "raw": "raw SQLite, two WAL commits per step (floor)",
    }
    report.table(
        [
            "case",
            "ms per step (median)",
            "spread (min - max)",
            "CPU ms per step",
            "ledger bytes per step",
        ],
        [
            [
                labels[name],
                f"{summary.median * 1e3:.3f}",
                f"{summary.low * 1e3:.3f} - {summary.high * 1e3:.3f}",
                f"{per_cpu[name].median * 1e3:.3f}",
                f"{per_byte[name].median:,.0f}",
            ]
            for name, summary in per_step.items()
        ],
    )
    rows: list[list[str]] = []
    compare: list[tuple[str, Callable[[], Summary], float]] = [
        (
            "ours / raw SQLite floor, per step",
            lambda: ratios(samples["ours"], samples["raw"]),
            BARS["raw"],
        ),
    ]
    if "langgraph" in cases:
        compare[:0] = [
            (
                "ours / LangGraph, per step",
                lambda: ratios(samples["ours"], samples["langgraph"]),
                BARS["langgraph"],
            ),
            (
                "ours / LangGraph, bytes per step",
                lambda: ratios(cases["ours"].bytes, cases["langgraph"].bytes),
                BARS["bytes"],
            ),
        ]
    for label, measure, bar in compare:
        ratio = measure()
        rows.append(
            [label, f"{ratio.median:.3f}", ratio.spread(), f"≤ {bar:g}", verdict(ratio.median, bar)]
        )
    report.table(["ratio", "median", "spread (min - max)", "bar", "verdict"], rows)
    report.notes += [
        f"{repeats} repeats after one warm-up run of each case; cases alternate with a "
        "rotating order; a sample is one whole run of the graph, divided by its steps.",
        "Ours runs through the real `Controller` with `in_process=True`: the controller and "
        "the python workers share this process (a pooled worker process adds its IPC per "
        "call). The workers are a no-op `async def`; the ledger file is a fresh SQLite "
        "database per sample, WAL, `synchronous=FULL` (SQLite's default), as for the peers.",
        "Bytes per step: growth of the database file over the run (after the run is "
        "admitted and before it starts, to after it finished), every connection closed.",
        "CPU ms per step: this process's CPU time over the same runs (fsync waits are not "
        "CPU); on a shared machine it shows the work done when wall time is mostly queueing.",
    ]
    return report
