"""B2: reading a run's tail after a cursor, with 10^3 vs 10^6 events already recorded.

Two SQLite ledgers hold one run each with the same shape of history: 100 executions that
each started, printed log lines and completed, 10^3 events in all in one ledger and 10^6
in the other (the extra events are log lines, the kind a run accumulates by the million;
a run has at most 65,536 executions). Then 100 new events arrive: one more execution and
its log lines. A read is ``snapshot_and_tail(run, after=cursor)`` returning those 100
events and the run's snapshot, as ``Run.events`` and the CLI's ``watch`` call it.

Followers poll with the same ``Ledger``; a cold reader is a fresh ``Ledger`` (a new
process, say) whose first read builds the snapshot.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.harness import Report, Summary, alternate, ratios, timed, verdict, versions
from zeroshot_kernel.contract.outcome import VerifiedOutcome
from zeroshot_kernel.ledger import Ledger
from zeroshot_kernel.ledger.events import (
    Completion,
    ExecutionReference,
    NodeCompleted,
    NodeStarted,
    Occurrence,
    RunEvent,
    RunStarted,
    SafeLog,
)

SIZES = {"10^3": 1_000, "10^6": 1_000_000}
EXECUTIONS = 100
TAIL = 100
READS_PER_SAMPLE = 50
BATCH = 1_000
BAR = 1.5


class History:
    """A ledger file holding one run with ``events`` events, then ``TAIL`` more."""

    def __init__(self, directory: Path, events: int) -> None:
        self.url = f"sqlite:///{directory / f'ledger-{events}.db'}"
        with Ledger(self.url) as ledger:
            self.run_id = ledger.create_run({"bench": "B2"}, title="b2")
            ledger.append(self.run_id, [RunStarted()])
            lines = (events - 1) // EXECUTIONS - 2
            for index in range(EXECUTIONS):
                _execution(ledger, self.run_id, index, lines)
            missing = events - 1 - EXECUTIONS * (lines + 2)
            if missing:
                padding: RunEvent = _log(None)
                ledger.append(self.run_id, [padding] * missing)
            self.cursor = ledger.snapshot(self.run_id).cursor
            _execution(ledger, self.run_id, EXECUTIONS, TAIL - 2)
        self.warm = Ledger(self.url)
        self.read(self.warm)

    def read(self, ledger: Ledger) -> None:
        _, tail = ledger.snapshot_and_tail(self.run_id, self.cursor)
        if len(tail) != TAIL:
            raise AssertionError(f"expected {TAIL} new events, read {len(tail)}")

    def follower(self) -> float:
        """Seconds per read for a reader that polls with the same ``Ledger``."""

        def reads() -> None:
            for _ in range(READS_PER_SAMPLE):
                self.read(self.warm)

        return timed(reads) / READS_PER_SAMPLE

    def cold(self) -> float:
        """Seconds for the first read of a fresh ``Ledger`` (opening it not included)."""
        with Ledger(self.url) as ledger:
            return timed(lambda: self.read(ledger))


def _log(execution: str | None) -> SafeLog:
    return SafeLog(execution=execution, stream="output", line="progress: step done, 42 items")


def _execution(ledger: Ledger, run_id: str, index: int, lines: int) -> None:
    """One execution: started, ``lines`` log lines (in batches), completed."""
    reference = ExecutionReference(
        run_id=run_id, node="work", node_instance=f"work[{index}]#1", execution=f"e{index}"
    )
    ledger.append(
        run_id,
        [
            NodeStarted(
                reference=reference,
                occurrence=Occurrence(node="work", map_indices=[index]),
                attempt=1,
                input={"task": f"item {index}"},
            )
        ],
    )
    line: RunEvent = _log(reference.execution)
    for start in range(0, lines, BATCH):
        ledger.append(run_id, [line] * min(BATCH, lines - start))
    outcome = VerifiedOutcome(status="verified", output={"answer": index})
    ledger.append(
        run_id, [NodeCompleted(completion=Completion(reference=reference, outcome=outcome))]
    )


def run(repeats: int) -> Report:
    report = Report("B2", "ledger tail read after a cursor, 10^3 vs 10^6 events recorded")
    report.versions = versions(["zeroshot-workbench", "sqlalchemy", "pydantic"])
    directory = Path(tempfile.mkdtemp(prefix="zeroshot-b2-"))
    try:
        histories = {label: History(directory, events) for label, events in SIZES.items()}
        cases: dict[str, Callable[[], float]] = {}
        for label, history in histories.items():
            cases[f"follower {label}"] = history.follower
            cases[f"cold {label}"] = history.cold
        samples = alternate(cases, repeats)
        for history in histories.values():
            history.warm.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    report.table(
        ["reader", "history", "µs per read (median)", "spread (min - max)"],
        [
            [
                name.split()[0],
                name.split()[1],
                f"{Summary.of(values).median * 1e6:,.0f}",
                f"{min(values) * 1e6:,.0f} - {max(values) * 1e6:,.0f}",
            ]
            for name, values in samples.items()
        ],
    )
    rows = []
    for reader in ("follower", "cold"):
        ratio = ratios(samples[f"{reader} 10^6"], samples[f"{reader} 10^3"])
        rows.append(
            [
                f"{reader}: 10^6 / 10^3",
                f"{ratio.median:.3f}",
                ratio.spread(),
                f"≤ {BAR:g}",
                verdict(ratio.median, BAR),
            ]
        )
    report.table(["ratio", "median", "spread (min - max)", "bar", "verdict"], rows)
    report.notes += [
        f"{repeats} repeats, the four cases alternated; a follower sample is the mean of "
        f"{READS_PER_SAMPLE} reads, a cold sample one read by a just-opened ledger.",
        f"Each read returns the snapshot and the {TAIL} events after the cursor; both "
        f"histories have {EXECUTIONS} executions before the tail, so the snapshot is the "
        "same size: what differs is only how much history lies before the cursor.",
    ]
    return report
