"""The research records on disk, one folder per study:
``<workspace>/.zeroshot/research/<study>/``.

Layout (the researcher writes, scouts and the reviewer only read)::

    study.json                              the study's task, and each run's first round
    charter.md  summary.md  backlog.md      human-readable, re-rendered from the JSON below
    incumbent.json                          the adopted candidate the next round builds on
    rounds/<NNN>.json                       per-round evidence, one entry per pass
    candidates/<id>/manifest.json           per-file SHA-256, content hash, parent, params,
    candidates/<id>/source/...              every measurement; and the full restorable source

Rounds are numbered across the study: a run continuing a study starts after the rounds
recorded before it (its offset is fixed in ``study.json`` by its first call), so its
candidate ids continue the study's numbering and nothing an earlier run wrote is rewritten.

A round's pass is written as ``started`` before anything is restored or reset, so a crash
in the middle still leaves the row that says what was being tried (and how, so that a
retried execution carries the pass on instead of starting it again).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import Field

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.research.experiment import ExperimentResult, ExperimentStatus
from zeroshot_kernel.research.protocol import ResearchResult, ScoutProposal
from zeroshot_kernel.research.task import Params

RECORDS_DIR = Path(".zeroshot") / "research"

Model = TypeVar("Model", bound=ContractModel)


class Measurement(ContractModel):
    """One run of a candidate's experiment, kept with the round that asked for it."""

    candidate_id: str
    round: int
    experiment: ExperimentResult


class CandidateManifest(ContractModel):
    """What a candidate is (its bytes) and what is known about it (its measurements)."""

    candidate_id: str
    parent_id: str
    round: int
    params: Params
    files: dict[str, str]
    """Relative POSIX path -> SHA-256 of the file's bytes."""
    content_sha256: str
    measurements: list[Measurement] = Field(default_factory=list)

    @property
    def values(self) -> list[float]:
        """The metric values of the successful measurements, in order."""
        return [m.experiment.metric for m in self.measurements if m.experiment.metric is not None]

    @property
    def metric(self) -> float | None:
        values = self.values
        return sum(values) / len(values) if values else None

    @property
    def status(self) -> ExperimentStatus:
        """``ok`` when every measurement succeeded, else the first failure's status."""
        if not self.measurements:
            return "no_metric"
        failed = [m.experiment.status for m in self.measurements if m.experiment.status != "ok"]
        return failed[0] if failed else "ok"


class PassPlan(ContractModel):
    """How a pass builds and measures, kept in its ``started`` row so that a pass whose
    execution was lost is carried on exactly as it was planned."""

    remeasure: bool
    reconsidered: bool
    repeats: int
    build: bool
    racing: bool
    discriminating: bool
    stop_check: bool


class RoundPass(ContractModel):
    """One researcher pass over a round: the first, or one answering corrections."""

    status: Literal["started", "done"]
    corrections: str
    proposals: list[ScoutProposal]
    proposal: ScoutProposal | None
    parent_id: str
    candidate_id: str
    incumbent_before: str
    measurements: list[Measurement] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    result: ResearchResult | None = None
    plan: PassPlan | None = None
    pass_id: str | None = None
    """The engine's name for this pass (see ``ResearcherInput.pass_id``)."""


class RoundRecord(ContractModel):
    round: int
    passes: list[RoundPass]

    @property
    def result(self) -> ResearchResult | None:
        """The latest finished pass's result (a pass cut short does not hide it)."""
        return next((p.result for p in reversed(self.passes) if p.result is not None), None)


class StudyRecord(ContractModel):
    """Which task a study researches, and where each of its runs started counting rounds."""

    task: str
    run_offsets: dict[str, int] = Field(default_factory=dict)


class IncumbentRecord(ContractModel):
    candidate_id: str
    adopted_round: int
    metric: float | None
    content_sha256: str


@dataclass(frozen=True)
class ResearchState:
    """A read-only snapshot of the records."""

    rounds: dict[int, RoundRecord]
    candidates: dict[str, CandidateManifest]
    incumbent: IncumbentRecord | None

    def results(self, before: int | None = None) -> list[ResearchResult]:
        """Finished results of rounds >= 1 (and < ``before``), in round order."""
        found = []
        for number in sorted(self.rounds):
            result = self.rounds[number].result
            if number >= 1 and (before is None or number < before) and result is not None:
                found.append(result)
        return found

    def incumbent_before(self, round_number: int) -> str | None:
        """The incumbent the records imply before ``round_number``: the latest adoption."""
        incumbent = None
        for number in sorted(self.rounds):
            result = self.rounds[number].result
            if number < round_number and result is not None and result.disposition == "adopt":
                incumbent = result.candidate_id
        return incumbent


class ResearchRecords:
    """Typed reads and atomic writes of one study's files under ``.zeroshot/research/``."""

    def __init__(self, workspace: str | Path, study: str) -> None:
        self.study = study
        self.root = Path(workspace).resolve() / RECORDS_DIR / study

    @property
    def study_path(self) -> Path:
        return self.root / "study.json"

    def read_study(self) -> StudyRecord | None:
        return _read(self.study_path, StudyRecord)

    def round_offset(self, run_id: str, task: str) -> int:
        """Rounds the study recorded before ``run_id`` started (fixed on its first call,
        so a retried execution gets the same numbers)."""
        study = self.read_study() or StudyRecord(task=task)
        if run_id not in study.run_offsets:
            recorded = [int(p.stem) for p in (self.root / "rounds").glob("*.json")
                        if p.stem.isdigit()]
            study = study.model_copy(update={
                "run_offsets": {**study.run_offsets, run_id: max(recorded, default=0)}})
            _write_json(self.study_path, study)
        return study.run_offsets[run_id]

    @property
    def charter_path(self) -> Path:
        return self.root / "charter.md"

    @property
    def summary_path(self) -> Path:
        return self.root / "summary.md"

    @property
    def backlog_path(self) -> Path:
        return self.root / "backlog.md"

    @property
    def incumbent_path(self) -> Path:
        return self.root / "incumbent.json"

    def round_path(self, round_number: int) -> Path:
        return self.root / "rounds" / f"{round_number:03d}.json"

    def candidate_dir(self, candidate_id: str) -> Path:
        return self.root / "candidates" / candidate_id

    def source_dir(self, candidate_id: str) -> Path:
        return self.candidate_dir(candidate_id) / "source"

    def manifest_path(self, candidate_id: str) -> Path:
        return self.candidate_dir(candidate_id) / "manifest.json"

    def initialised(self) -> bool:
        return self.incumbent_path.is_file()

    def read_round(self, round_number: int) -> RoundRecord | None:
        return _read(self.round_path(round_number), RoundRecord)

    def read_manifest(self, candidate_id: str) -> CandidateManifest | None:
        return _read(self.manifest_path(candidate_id), CandidateManifest)

    def read_incumbent(self) -> IncumbentRecord | None:
        return _read(self.incumbent_path, IncumbentRecord)

    def write_round(self, record: RoundRecord) -> None:
        _write_json(self.round_path(record.round), record)

    def write_manifest(self, manifest: CandidateManifest) -> None:
        _write_json(self.manifest_path(manifest.candidate_id), manifest)

    def write_incumbent(self, incumbent: IncumbentRecord) -> None:
        _write_json(self.incumbent_path, incumbent)

    def write_text(self, path: Path, text: str) -> None:
        _write_atomic(path, text)

    def snapshot(self) -> ResearchState:
        """Everything recorded so far; empty when the research has not started."""
        rounds = {}
        for path in sorted((self.root / "rounds").glob("*.json")):
            record = _read(path, RoundRecord)
            if record is not None:
                rounds[record.round] = record
        return ResearchState(rounds=rounds, candidates=self.candidates(),
                             incumbent=self.read_incumbent())

    def candidates(self) -> dict[str, CandidateManifest]:
        """Every candidate's manifest, by id."""
        found = {}
        for path in sorted((self.root / "candidates").glob("*/manifest.json")):
            manifest = _read(path, CandidateManifest)
            if manifest is not None:
                found[manifest.candidate_id] = manifest
        return found

    def begin_pass(self, round_number: int, started: RoundPass) -> RoundRecord:
        """Record the row for a pass before any restore or reset happens."""
        existing = self.read_round(round_number)
        passes = [*existing.passes, started] if existing else [started]
        record = RoundRecord(round=round_number, passes=passes)
        self.write_round(record)
        return record

    def finish_pass(self, round_number: int, finished: RoundPass) -> None:
        """Replace the round's last (started) pass with its finished form."""
        existing = self.read_round(round_number)
        if existing is None or not existing.passes:
            raise RuntimeError(f"round {round_number} has no started pass to finish")
        self.write_round(RoundRecord(round=round_number, passes=[*existing.passes[:-1], finished]))


_CACHE_SIZE = 4096
_cache: OrderedDict[Path, tuple[tuple[int, int, int], ContractModel]] = OrderedDict()
_cache_lock = threading.Lock()


def _read(path: Path, model: type[Model]) -> Model | None:
    """Parse a record file, once per version of it: agents re-read the records every call,
    and parsing every round again would make a round's cost grow with the run."""
    try:
        stat = path.stat()
        stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        with _cache_lock:
            cached = _cache.get(path)
            if cached is not None and cached[0] == stamp and isinstance(cached[1], model):
                _cache.move_to_end(path)
                return cached[1]
        value = model.from_wire(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    with _cache_lock:
        _cache[path] = (stamp, value)
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return value


def _write_json(path: Path, model: ContractModel) -> None:
    _write_atomic(path, json.dumps(model.to_wire(), indent=2, sort_keys=True) + "\n")


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
