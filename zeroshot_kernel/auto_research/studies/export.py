"""A study as one object: its rounds and candidates as rows, a DataFrame, a CSV or JSON.

Rows come from the study's records (the trusted measure and adoption steps wrote them);
the ledger adds what only it knows: which run decided a round, with which harness and model,
and the reviewer's verdict. A study whose runs are in another ledger still exports, with
those columns empty.

Example::

    from zeroshot_kernel.auto_research import Study

    study = Study.open(".", "branin")
    rounds = study.to_dataframe()                    # pandas: one row per decided round
    candidates = study.to_dataframe("candidates")    # one row per stored candidate
    study.write_csv("branin-rounds.csv")

CSV cells that a spreadsheet would run as a formula (text starting with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return: OWASP's rule) start with ``'``: a strategy or
parameter value an agent wrote is data, never ``=cmd|' /C calc'!A0``. Files are written
atomically and never through a symbolic link (``safe_files.write_atomic``).
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic.alias_generators import to_camel

from zeroshot_kernel.auto_research.records import RECORDS_DIR, ResearchRecords, RoundRecord
from zeroshot_kernel.auto_research.studies.catalog import (
    StudyError,
    check_study_name,
    migrate_legacy,
)
from zeroshot_kernel.auto_research.studies.table import harness_and_model
from zeroshot_kernel.auto_research.views import RoundView, load_research_view
from zeroshot_kernel.ledger.errors import RunNotFound
from zeroshot_kernel.safe_files import write_atomic

if TYPE_CHECKING:
    from zeroshot_kernel.client import Client

Kind = Literal["rounds", "candidates"]
KINDS: tuple[Kind, ...] = ("rounds", "candidates")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet read a text cell as a formula (the OWASP list)."""
PARAM_PREFIX = "param."
"""Flat tables (DataFrame, CSV) put each parameter in its own column, ``param.<name>``."""

ROUND_COLUMNS = (
    "round",
    "run_id",
    "candidate_id",
    "parent_id",
    "strategy",
    "approach",
    "measure_status",
    "experiment_status",
    "metric",
    "repeats",
    "incumbent_id",
    "incumbent_metric",
    "gain",
    "noise_floor",
    "effect_size",
    "gate_decision",
    "max_seeds",
    "disposition",
    "adopted",
    "best_so_far",
    "reconsidered",
    "passes",
    "verdict",
    "reason",
    "harness",
    "model",
)
CANDIDATE_COLUMNS = (
    "round",
    "candidate_id",
    "parent_id",
    "content_sha256",
    "metric_mean",
    "metric_std",
    "metric_n",
    "status",
    "decision",
    "adopted",
    "incumbent",
    "verdict",
    "run_id",
    "harness",
    "model",
)


@dataclass(frozen=True)
class _RunFacts:
    run_id: str
    harness: str
    model: str
    rounds: dict[int, RoundView]


class Study:
    """One study's records (``.zeroshot/research/<name>/``), read-only.

    Open it with :meth:`open`; ``client`` (default: the workspace's ledger) supplies the
    run, harness, model and reviewer columns.
    """

    def __init__(
        self, workspace: str | os.PathLike[str], name: str, *, client: Client | None = None
    ) -> None:
        self.workspace = Path(workspace).resolve()
        self.name = check_study_name(name)
        self.records = ResearchRecords(self.workspace, self.name)
        self._client = client
        self._facts: list[_RunFacts] | None = None

    def __repr__(self) -> str:
        return f"Study({self.name!r})"

    @classmethod
    def open(
        cls, workspace: str | os.PathLike[str], name: str, *, client: Client | None = None
    ) -> Study:
        """The study ``name`` of ``workspace``; :class:`StudyError` when the name is not a
        study name or the workspace has no such study (naming the ones it has)."""
        migrate_legacy(Path(workspace))
        study = cls(workspace, name, client=client)
        if not study.records.root.is_dir():
            root = Path(workspace).resolve() / RECORDS_DIR
            known = sorted(p.name for p in root.glob("*") if p.is_dir()) if root.is_dir() else []
            raise StudyError(
                f"no study {name!r} in {study.workspace}"
                + (f" (studies: {', '.join(known)})" if known else " (no studies yet)")
            )
        return study

    # --- rows -------------------------------------------------------------------------

    def rounds(self) -> list[dict[str, Any]]:
        """One row per decided round, in order (``params`` a dict)."""
        state = self.records.snapshot()
        facts = self._run_facts()
        offsets = self._offsets()
        rows: list[dict[str, Any]] = []
        best: float | None = None
        for number in sorted(state.rounds):
            record = state.rounds[number]
            result = record.result
            if number < 1 or result is None:
                continue
            run = _run_of(number, facts, offsets)
            run_id = run.run_id if run else _offset_run(number, offsets)
            # the incumbent's metric after the round, as the views and charts draw it: from
            # the incumbent a run started with (a run continuing a study measures it again)
            if not rows or rows[-1]["run_id"] != run_id:
                best = result.incumbent_metric
            if result.disposition == "adopt":
                best = result.metric
            seen = run.rounds.get(number) if run else None
            rows.append(
                {
                    "round": number,
                    "run_id": run_id,
                    "candidate_id": result.candidate_id,
                    "parent_id": result.parent_id,
                    "strategy": result.strategy,
                    "approach": result.approach,
                    "params": _params(result.params),
                    "measure_status": result.measure_status,
                    "experiment_status": result.experiment_status,
                    "metric": result.metric,
                    "repeats": len(result.metric_repeats),
                    "incumbent_id": result.incumbent_id,
                    "incumbent_metric": result.incumbent_metric,
                    "gain": result.gain if result.compared else None,
                    "noise_floor": result.noise_floor if result.compared else None,
                    "effect_size": result.effect_size,
                    "gate_decision": result.gate_decision,
                    "max_seeds": result.max_seeds,
                    "disposition": result.disposition,
                    "adopted": result.disposition == "adopt",
                    "best_so_far": best,
                    "reconsidered": result.reconsidered,
                    "passes": len(record.passes),
                    "verdict": seen.verdict if seen else None,
                    "reason": seen.reason if seen else None,
                    "harness": run.harness if run else None,
                    "model": run.model if run else None,
                }
            )
        return rows

    def candidates(self) -> list[dict[str, Any]]:
        """One row per stored candidate, by round then id: its measurements (every
        successful one, whichever round asked for it), the decision of the round that built
        it, and the reviewer's verdict."""
        state = self.records.snapshot()
        facts = self._run_facts()
        offsets = self._offsets()
        decided = {
            r.result.candidate_id: (n, r)
            for n, r in state.rounds.items()
            if r.result is not None and r.result.candidate_id
        }
        incumbent = state.incumbent.candidate_id if state.incumbent else None
        rows = []
        for manifest in sorted(state.candidates.values(), key=lambda m: (m.round, m.candidate_id)):
            values = manifest.values
            number, record = decided.get(manifest.candidate_id, (manifest.round, None))
            result = record.result if isinstance(record, RoundRecord) else None
            run = _run_of(number, facts, offsets) if number >= 1 else None
            seen = run.rounds.get(number) if run else None
            decision = (
                "baseline"
                if manifest.round < 1
                else result.disposition
                if result is not None
                else "undecided"
            )
            rows.append(
                {
                    "round": manifest.round,
                    "candidate_id": manifest.candidate_id,
                    "parent_id": manifest.parent_id,
                    "content_sha256": manifest.content_sha256,
                    "params": _params(manifest.params),
                    "metric_mean": sum(values) / len(values) if values else None,
                    "metric_std": _std(values),
                    "metric_n": len(values),
                    "status": manifest.status,
                    "decision": decision,
                    "adopted": decision == "adopt",
                    "incumbent": manifest.candidate_id == incumbent,
                    "verdict": seen.verdict if seen else None,
                    "run_id": run.run_id
                    if run
                    else (_offset_run(number, offsets) if number >= 1 else None),
                    "harness": run.harness if run else None,
                    "model": run.model if run else None,
                }
            )
        return rows

    def rows(self, kind: Kind = "rounds") -> list[dict[str, Any]]:
        """:meth:`rounds` or :meth:`candidates`."""
        if kind not in KINDS:
            raise ValueError(f"kind must be 'rounds' or 'candidates', not {kind!r}")
        return self.rounds() if kind == "rounds" else self.candidates()

    def flat_rows(self, kind: Kind = "rounds") -> tuple[list[str], list[dict[str, Any]]]:
        """Columns and rows with each parameter in its own ``param.<name>`` column."""
        rows = self.rows(kind)
        names = sorted({name for row in rows for name in row["params"]})
        base = list(ROUND_COLUMNS if kind == "rounds" else CANDIDATE_COLUMNS)
        at = base.index("candidate_id") + (2 if kind == "rounds" else 3)
        columns = [*base[:at], *(PARAM_PREFIX + n for n in names), *base[at:]]
        flat = []
        for row in rows:
            params = row["params"]
            entry = {key: value for key, value in row.items() if key != "params"}
            entry.update({PARAM_PREFIX + n: params.get(n) for n in names})
            flat.append({column: entry.get(column) for column in columns})
        return columns, flat

    def to_dataframe(self, kind: Kind = "rounds") -> Any:
        """A pandas DataFrame, one row per round (``kind="candidates"``: per candidate),
        parameters as ``param.<name>`` columns. Needs pandas (the ``lab`` extra)."""
        try:
            pandas = importlib.import_module("pandas")
        except ImportError:
            raise ImportError(
                "Study.to_dataframe needs pandas: pip install 'zeroshot-workbench[lab]' (or pandas)"
            ) from None
        columns, rows = self.flat_rows(kind)
        return pandas.DataFrame(rows, columns=columns)

    def csv_text(self, kind: Kind = "rounds") -> str:
        """The flat rows as CSV, RFC 4180 (lines end in CRLF; empty cells for missing
        values; text a spreadsheet would take for a formula starts with ``'``)."""
        columns, rows = self.flat_rows(kind)
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\r\n")  # so a cell holding \r is quoted
        writer.writerow([_cell(column) for column in columns])
        for row in rows:
            writer.writerow([_cell(row[column]) for column in columns])
        return buffer.getvalue()

    def json_rows(self, kind: Kind = "rounds") -> list[dict[str, Any]]:
        """The rows with camelCase keys, as every ``--json`` output writes them; parameters
        stay a nested ``params`` object under their own names."""
        return [
            {
                to_camel(key): (value if key == "params" else _finite(value))
                for key, value in row.items()
            }
            for row in self.rows(kind)
        ]

    def write_csv(self, path: str | os.PathLike[str], kind: Kind = "rounds") -> Path:
        """Write :meth:`csv_text` to ``path`` (its folder must exist) atomically: a reader
        sees the previous file or the whole new one, never a part. A symbolic link (or
        anything but a regular file) at ``path`` is refused: ``safe_files.FileRefused``."""
        return write_atomic(path, self.csv_text(kind).encode("utf-8"))

    def write_json(self, path: str | os.PathLike[str], kind: Kind = "rounds") -> Path:
        """Write :meth:`json_rows` to ``path`` atomically, as :meth:`write_csv` does."""
        return write_atomic(path, (json.dumps(self.json_rows(kind), indent=2) + "\n").encode())

    # --- the ledger's side ------------------------------------------------------------

    def _offsets(self) -> dict[str, int]:
        study = self.records.read_study()
        return dict(study.run_offsets) if study is not None else {}

    def _run_facts(self) -> list[_RunFacts]:
        if self._facts is not None:
            return self._facts
        facts: list[_RunFacts] = []
        client = self._client
        if client is None:
            try:
                from zeroshot_kernel.client import Client

                client = self._client = Client(workspace=str(self.workspace))
            except Exception:
                self._facts = facts
                return facts
        for run_id in self._offsets():
            try:
                admitted = client.ledger.admitted(run_id)
                view = load_research_view(client.ledger, run_id)
            except RunNotFound:
                continue
            harness, model = harness_and_model(admitted)
            facts.append(_RunFacts(run_id, harness, model, {r.round: r for r in view.rounds}))
        self._facts = facts
        return facts


def _cell(value: Any) -> Any:
    """``value`` for a CSV cell: nothing for ``None``, text neutralised (numbers stay)."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _run_of(number: int, facts: list[_RunFacts], offsets: Mapping[str, int]) -> _RunFacts | None:
    for run in facts:
        if number in run.rounds:
            return run
    named = _offset_run(number, offsets)
    return next((run for run in facts if run.run_id == named), None)


def _offset_run(number: int, offsets: Mapping[str, int]) -> str | None:
    """The run whose first round is the latest at or before ``number``."""
    before = [(offset, run_id) for run_id, offset in offsets.items() if offset < number]
    return max(before)[1] if before else None


def _params(params: Any) -> dict[str, Any]:
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except json.JSONDecodeError:
            return {}
    return dict(params) if isinstance(params, Mapping) else {}


def _std(values: list[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: such a value is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
