"""The research records on disk, one folder per study:
``<workspace>/.zeroshot/research/<study>/``.

Layout (only trusted code writes: the measure and adoption steps; agents only read)::

    study.json                              the study's task, and each run's first round
    charter.md  summary.md  backlog.md      human-readable, re-rendered from the JSON below
    incumbent.json                          the adopted candidate the next round builds on
    rounds/<NNN>.json                       per round: each pass's change and evidence,
                                            and the round's decision
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
import re
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal, TypeVar

from pydantic import Field, ValidationError

from zeroshot_kernel.auto_research.experiment import ExperimentResult, ExperimentStatus
from zeroshot_kernel.auto_research.protocol import Change, Evidence, ResearchResult, ScoutProposal
from zeroshot_kernel.auto_research.task import Direction, Params, TaskSpec
from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.safe_files import opened_below, read_open

RECORDS_DIR = Path(".zeroshot") / "research"
CANDIDATE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What a candidate id may be: a folder name that cannot leave ``candidates/``."""
MAX_RECORD_BYTES = 16 * 1024 * 1024
"""The largest record file read (a round of many passes with their diffs stays far below)."""

Model = TypeVar("Model", bound=ContractModel)


class Measurement(ContractModel):
    """One run of a candidate's experiment, kept with the round that asked for it."""

    candidate_id: str
    round: int
    experiment: ExperimentResult
    pass_id: str | None = None
    """The measure step's pass that ran it (see ``RoundPass.pass_id``)."""
    content_sha256: str = ""
    """The bytes it measured: the candidate's content hash, checked on the copy it ran
    (``""`` in records made before runs were bound to their bytes)."""


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


class RoundPass(ContractModel):
    """One pass over a round: the researcher's change and the trusted measure step's
    evidence for it (the first pass, or one answering corrections)."""

    status: Literal["started", "done"]
    pass_id: str
    """The engine's name for this pass (run, round and pass number): a retried execution
    finds the row its lost execution recorded and carries the pass on."""
    corrections: str = ""
    proposals: list[ScoutProposal] = Field(default_factory=list)
    change: Change | None = None
    """The researcher's change (``None`` for the baseline)."""
    evidence: Evidence | None = None
    measurements: list[Measurement] = Field(default_factory=list)
    """The experiment runs this pass ran (runs it reused from earlier passes are not here)."""
    notes: list[str] = Field(default_factory=list)


class RoundRecord(ContractModel):
    round: int
    passes: list[RoundPass]
    result: ResearchResult | None = None
    """The decided round (the trusted adoption's result); ``None`` while undecided."""


class StudyRecord(ContractModel):
    """Which task a study researches, and where each of its runs started counting rounds.

    ``task_name``, ``metric`` and ``direction`` are the task as the study's first run found
    it (``None`` in records from before they were kept): a run whose task reads another
    name or measures another metric would mix numbers that cannot be compared, so it is
    refused (:func:`.studies.catalog.claim_study`)."""

    task: str
    task_name: str | None = None
    metric: str | None = None
    direction: Direction | None = None
    run_offsets: dict[str, int] = Field(default_factory=dict)

    def with_identity(self, spec: TaskSpec) -> StudyRecord:
        """This record, naming ``spec``'s task where it names none yet."""
        if self.task_name is not None:
            return self
        return self.model_copy(
            update={"task_name": spec.name, "metric": spec.metric, "direction": spec.direction}
        )

    def identity_problem(self, task: str, spec: TaskSpec | None) -> str | None:
        """Why a run of ``task`` (its reference) with ``spec`` (``None``: unknown) cannot
        continue this study, or ``None`` when it can: another folder name, another task
        name, or another metric or direction than the study recorded."""
        if Path(self.task).name != Path(task).name:
            return f"researches task {self.task!r}, not {task!r}"
        if spec is None:
            return None
        if self.task_name is not None and self.task_name != spec.name:
            return f"researches task {self.task_name!r}, and {task!r} is now {spec.name!r}"
        if self.metric is not None and (self.metric, self.direction) != (
            spec.metric,
            spec.direction,
        ):
            return (
                f"measures {self.metric} ({self.direction}), and {task!r} now measures "
                f"{spec.metric} ({spec.direction}): the numbers could not be compared"
            )
        return None


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
        self.workspace = Path(workspace).resolve()
        """Every record is read from here without following a link (see ``safe_files``)."""
        self.root = self.workspace / RECORDS_DIR / study

    @property
    def study_path(self) -> Path:
        return self.root / "study.json"

    def read_study(self) -> StudyRecord | None:
        return _read(self.workspace, self.study_path, StudyRecord)

    def round_offset(self, run_id: str, task: str, spec: TaskSpec) -> int:
        """Rounds the study recorded before ``run_id`` started (fixed on its first call,
        so a retried execution gets the same numbers); a study that does not name its
        task's name and metric yet records ``spec``'s."""
        study = self.read_study() or StudyRecord(task=task)
        if run_id not in study.run_offsets:
            study = study.with_identity(spec).model_copy(
                update={"run_offsets": {**study.run_offsets, run_id: self._last_round()}}
            )
            _write_json(self.study_path, study)
        return study.run_offsets[run_id]

    def recorded_offset(self, run_id: str) -> int:
        """:meth:`round_offset` without fixing it: what it is or would be now (for views;
        0 when the records cannot be read)."""
        try:
            study = self.read_study()
            if study is not None and run_id in study.run_offsets:
                return study.run_offsets[run_id]
            return self._last_round()
        except (OSError, ValueError):
            return 0

    def _last_round(self) -> int:
        """The study's last decided round. A round that its run was stopped in before it
        was decided is not skipped: the next run does it again (the passes it began stay
        in its record), so a study's rounds are numbered without gaps."""
        numbers = sorted(
            (int(p.stem) for p in (self.root / "rounds").glob("*.json") if p.stem.isdigit()),
            reverse=True,
        )
        for number in numbers:
            try:
                record = self.read_round(number)
            except (OSError, ValueError):  # a record of an older layout: a decided round
                return number
            if number == 0 or record is None or record.result is not None:
                return number
        return 0

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
        return _read(self.workspace, self.round_path(round_number), RoundRecord)

    def read_manifest(self, candidate_id: str) -> CandidateManifest | None:
        """The candidate's manifest; ``None`` for an unknown candidate, and for an id that
        cannot name one (``../c000``, proposed by an agent or typed by a user)."""
        if not CANDIDATE_ID.match(candidate_id):
            return None
        return _read(self.workspace, self.manifest_path(candidate_id), CandidateManifest)

    def read_incumbent(self) -> IncumbentRecord | None:
        return _read(self.workspace, self.incumbent_path, IncumbentRecord)

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
            try:
                record = _read(self.workspace, path, RoundRecord)
            except ValidationError:
                continue  # a round recorded before the trusted measure step: kept, not read
            if record is not None:
                rounds[record.round] = record
        return ResearchState(
            rounds=rounds, candidates=self.candidates(), incumbent=self.read_incumbent()
        )

    def candidates(self) -> dict[str, CandidateManifest]:
        """Every candidate's manifest, by id."""
        found = {}
        for path in sorted((self.root / "candidates").glob("*/manifest.json")):
            manifest = _read(self.workspace, path, CandidateManifest)
            if manifest is not None:
                found[manifest.candidate_id] = manifest
        return found

    def begin_pass(self, round_number: int, started: RoundPass) -> RoundRecord:
        """Record the row for a pass before any restore or reset happens."""
        with _rounds_lock:
            existing = self.read_round(round_number)
            passes = [*existing.passes, started] if existing else [started]
            record = RoundRecord(round=round_number, passes=passes)
            self.write_round(record)
            return record

    def finish_pass(self, round_number: int, finished: RoundPass) -> None:
        """Replace the round's row of ``finished.pass_id`` with its finished form."""
        with _rounds_lock:  # candidates measured at once finish in any order
            existing = self.read_round(round_number)
            if existing is None or not any(p.pass_id == finished.pass_id for p in existing.passes):
                raise RuntimeError(f"round {round_number} has no pass {finished.pass_id} to finish")
            passes = [finished if p.pass_id == finished.pass_id else p for p in existing.passes]
            self.write_round(existing.model_copy(update={"passes": passes}))

    def move_pass_last(self, round_number: int, pass_id: str) -> None:
        """Make ``pass_id``'s row the round's last: of candidates measured at once, the
        one the round decides on (adoption reads the last row's evidence)."""
        with _rounds_lock:
            existing = self.read_round(round_number)
            assert existing is not None
            passes = sorted(existing.passes, key=lambda p: p.pass_id == pass_id)
            if passes != existing.passes:
                self.write_round(existing.model_copy(update={"passes": passes}))

    def decide(self, result: ResearchResult) -> None:
        """Record the round's decision (the trusted adoption's result)."""
        existing = self.read_round(result.round)
        if existing is None:
            raise RuntimeError(f"round {result.round} has no pass to decide on")
        self.write_round(existing.model_copy(update={"result": result}))


_CACHE_SIZE = 4096
_cache: OrderedDict[Path, tuple[tuple[int, int, int], ContractModel]] = OrderedDict()
_cache_lock = threading.Lock()
_rounds_lock = threading.Lock()
"""Held while a round's record is read and written again (its passes may run at once)."""


def _read(workspace: Path, path: Path, model: type[Model]) -> Model | None:
    """Parse a record file, once per version of it: agents re-read the records every call,
    and parsing every round again would make a round's cost grow with the run. The file
    is opened below ``workspace`` without following a link, must be a regular file of at
    most :data:`MAX_RECORD_BYTES`, and JSON nested too deeply for the parser is damage
    (a ``ValueError``) like any other."""
    try:
        with opened_below(workspace, PurePosixPath(path.relative_to(workspace))) as handle:
            stat = os.fstat(handle)
            stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
            with _cache_lock:
                cached = _cache.get(path)
                if cached is not None and cached[0] == stamp and isinstance(cached[1], model):
                    _cache.move_to_end(path)
                    return cached[1]
            data = read_open(handle, limit=MAX_RECORD_BYTES, shown=str(path))
    except FileNotFoundError:
        return None
    try:
        document = json.loads(data)
    except RecursionError:
        raise ValueError(f"{path} is nested too deeply to be a record") from None
    value = model.from_wire(document)
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
