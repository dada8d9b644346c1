"""The trusted measure step: the engine, not a model, turns a researcher's change into
evidence.

One call is one pass over a round. It records the pass's row before anything is restored,
restores the parent's bytes and verifies them against its manifest (rebuilding them when
they are damaged and can be rebuilt), applies the change in a scratch copy (refusing an
illegal one as a recorded ``change_rejected`` result), stores the candidate with its
content hashes (a change whose bytes equal a stored candidate measures that candidate),
then measures the candidate and the incumbent on the same experiment seeds under the
task's hard time budget, racing: more paired seeds while the evidence is undecided, up to
the task's budget (``noise_floor.race``), and records how the race ended with the evidence.

Every experiment runs in a box (``experiment_box``) on a fresh copy of the candidate's
stored bytes, checked against its content hash first, and is recorded in its candidate's
manifest with that hash as soon as it ends, keyed by its seed; a run already recorded for
a candidate and seed is never run again: a retried execution (its controller died)
carries the pass on from what was recorded.
The study's first call measures the task's starting candidate as the baseline (round 0),
the first incumbent.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zeroshot_kernel.auto_research.candidates import (
    content_sha256,
    repair_candidate,
    restore_candidate,
    store_candidate,
    tree_hashes,
    verify_candidate,
)
from zeroshot_kernel.auto_research.change import apply_change, describe_diff, parse_change
from zeroshot_kernel.auto_research.executor import ExperimentExecutor, LocalExecutor, executor_for
from zeroshot_kernel.auto_research.experiment import ExperimentResult
from zeroshot_kernel.auto_research.experiment_box import experiment_containment
from zeroshot_kernel.auto_research.markdown_records import charter, render_records
from zeroshot_kernel.auto_research.noise_floor import (
    Borrowed,
    Gate,
    Measured,
    Paired,
    Spread,
    borrowed_sigma,
    differences,
    paired,
    pooled_sigma,
    race,
)
from zeroshot_kernel.auto_research.protocol import (
    Change,
    Evidence,
    MeasureStatus,
    ResearchResult,
    ResultStatus,
    ScoutProposal,
)
from zeroshot_kernel.auto_research.pruning import Pruning, pruning_for
from zeroshot_kernel.auto_research.records import (
    CandidateManifest,
    IncumbentRecord,
    Measurement,
    ResearchRecords,
    RoundPass,
)
from zeroshot_kernel.auto_research.seeds import experiment_seed
from zeroshot_kernel.auto_research.studies.catalog import records_for
from zeroshot_kernel.auto_research.task import ResearchTask, resolve_task
from zeroshot_kernel.exceptions import OperationFailed
from zeroshot_kernel.sandbox import Containment

BASELINE_ID = "c000"


@dataclass(frozen=True)
class MeasureRequest:
    """One pass of the measure step, as the engine calls it."""

    task: str
    study: str
    workspace: str
    run_id: str
    round: int
    pass_number: int
    pass_id: str
    """The engine's name for this pass (run, round and pass): a retry finds its row."""
    seed: int
    """The study's base seed: every candidate is measured on the same seed sequence."""
    change: Any
    """The researcher's change in its wire form, as the researcher wrote it."""
    proposals: list[ScoutProposal] = field(default_factory=list)
    corrections: str = ""
    reconsideration_due: bool = False
    parallel: int | None = None
    """Experiment runs at a time (default: one per CPU)."""
    dask: str | None = None
    """The Dask scheduler the experiments run on (default: this machine)."""
    candidates: int | None = None
    """Candidates measured at once (default: the task's ``parallel``): the researcher's
    change, then the round's other scout proposals applied to the same parent."""
    containment: Containment = field(default_factory=Containment)
    """How the run contains model-written code (its experiments run boxed by default)."""


class CandidateChanged(OperationFailed):
    """A candidate's stored bytes no longer match its content hash when its experiments
    are about to run (they were verified earlier in the pass): nothing is measured."""


class BaselineFailed(OperationFailed):
    """The task's starting candidate produced no metric: there is nothing to improve on,
    and the run ends saying why (the experiment's own last lines)."""

    def __init__(self, manifest: CandidateManifest) -> None:
        failed = [m.experiment for m in manifest.measurements if m.experiment.status != "ok"]
        last = failed[-1] if failed else None
        exit_code = "" if last is None or last.exit_code is None else f", exit {last.exit_code}"
        tail = (
            ""
            if last is None
            else " | ".join(line.strip() for line in last.output_tail.strip().splitlines()[-3:])
        )
        super().__init__(
            f"the baseline experiment failed ({manifest.status}{exit_code}): {tail or 'no output'}"
        )


_BUILDING = threading.Lock()
"""Held while a candidate is built and stored: its id is the first one free."""


@dataclass
class _Turn:
    """A pass's turn to build among candidates measured at once: after the one before it
    in proposal order, so that their ids follow that order as in a sequential study."""

    done: threading.Event = field(default_factory=threading.Event)
    previous: _Turn | None = None

    def __enter__(self) -> None:
        if self.previous is not None:
            self.previous.done.wait()
        _BUILDING.acquire()

    def __exit__(self, *_: object) -> None:
        _BUILDING.release()
        self.done.set()


class _IncumbentAhead:
    """The incumbent's remaining seeds of the race, run at once when a race of candidates
    measured at once on a cluster goes past its first look. Racing in step, each look of
    each candidate needs the incumbent's seed of that look: one run more than the
    candidates, a wave of its own on workers they fill, look after look. Run ahead, the
    incumbent's seeds take the workers once, and later rounds against the same incumbent
    find them recorded. Started at most once a pass; the pass ends after it."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="zeroshot-incumbent")
        self._started: Future[None] | None = None

    def start(self, run: Callable[[], None]) -> None:
        with self._lock:
            if self.enabled and self._started is None:
                self._started = self._pool.submit(run)

    def __enter__(self) -> _IncumbentAhead:
        return self

    def __exit__(self, error: type[BaseException] | None, *_: object) -> None:
        self._pool.shutdown(wait=True)
        if error is None and self._started is not None:
            self._started.result()  # its failure is the pass's, as a look's would be


def measure(request: MeasureRequest) -> Evidence:
    """Measure one pass's change (see the module's docstring); its evidence is also the
    pass's row in ``rounds/<round>.json``."""
    task = resolve_task(request.task, request.workspace)
    containment, unboxed = _containment(task, request)  # refuses a code task before records
    records = records_for(request.workspace, request.study)
    if not records.initialised():
        measure_baseline(
            task,
            records,
            request.seed,
            f"{request.run_id}/baseline",
            request.parallel,
            containment=containment,
            executor=executor_for(request.dask),
        )
    requests = [request, *_alternates(request, request.candidates or task.spec.parallel)]
    begun = [_begin(records, r) for r in requests]  # the rows in proposal order, first

    def finish(
        at: int,
        building: AbstractContextManager[object] = _BUILDING,
        ahead: _IncumbentAhead | None = None,
    ) -> Evidence:
        started = begun[at]
        if isinstance(started, Evidence):
            return started  # the pass finished; only its execution's completion was lost
        return _run_pass(
            task, records, requests[at], started, containment, unboxed, building, ahead
        )

    if len(requests) == 1:
        return finish(0)
    turns = [_Turn() for _ in requests]
    for turn, previous in zip(turns[1:], turns, strict=False):
        turn.previous = previous

    with (
        _IncumbentAhead(enabled=bool(request.dask) and task.spec.pruner is None) as ahead,
        ThreadPoolExecutor(len(requests), thread_name_prefix="zeroshot-candidate") as pool,
    ):

        def finish_in_turn(at: int) -> Evidence:
            try:
                return finish(at, turns[at], ahead)
            finally:
                turns[at].done.set()  # built, or never to be: the next may build

        measured = list(pool.map(finish_in_turn, range(len(requests))))
    chosen = next((at for at, e in enumerate(measured) if e.supports_adoption), 0)
    records.move_pass_last(request.round, requests[chosen].pass_id)  # the one decided
    render_records(task, records)
    return measured[chosen]


def _alternates(request: MeasureRequest, candidates: int) -> list[MeasureRequest]:
    """The pass's other candidates (up to ``candidates - 1``): each scout proposal whose
    parameters differ from the researcher's change and the earlier ones, in proposal
    order, applied to the change's parent and measured like it; none for a change that
    does not parse or a proposal without parameters (a code task's)."""
    parsed = parse_change(request.change)
    if candidates <= 1 or not isinstance(parsed, Change):
        return []
    seen, found = [parsed.params], list[MeasureRequest]()
    for proposal in request.proposals:
        if len(found) == candidates - 1:
            break
        if not proposal.params or proposal.params in seen:
            continue
        seen.append(proposal.params)
        change = Change(
            parent_id=parsed.parent_id,
            strategy=proposal.strategy,
            approach=proposal.approach,
            rationale=proposal.rationale,
            params=proposal.params,
            measurement=parsed.measurement,
        )
        found.append(
            dataclasses.replace(
                request,
                pass_id=f"{request.pass_id}/candidate-{len(found) + 2}",
                change=change.to_wire(),
            )
        )
    return found


def _begin(records: ResearchRecords, request: MeasureRequest) -> Evidence | RoundPass:
    """The pass's row: begun now, or as an earlier execution left it (its evidence when
    it finished)."""
    record = records.read_round(request.round)
    row = next((p for p in record.passes if p.pass_id == request.pass_id), None) if record else None
    if row is not None and row.evidence is not None:
        return row.evidence
    parsed = parse_change(request.change)
    if row is None:
        row = RoundPass(
            status="started",
            pass_id=request.pass_id,
            corrections=request.corrections,
            proposals=request.proposals,
            change=parsed if isinstance(parsed, Change) else None,
        )
        records.begin_pass(request.round, row)  # the row exists before any restore
        return row
    return row.model_copy(
        update={
            "notes": [
                *row.notes,
                "carried on after its earlier execution was lost; recorded runs are kept",
            ]
        }
    )


def _run_pass(
    task: ResearchTask,
    records: ResearchRecords,
    request: MeasureRequest,
    row: RoundPass,
    containment: Containment,
    unboxed: str,
    building: AbstractContextManager[object] = _BUILDING,
    ahead: _IncumbentAhead | None = None,
) -> Evidence:
    parsed = parse_change(request.change)
    pass_ = _Pass(task, records, request, row, containment, building=building, ahead=ahead)
    if unboxed:
        pass_.notes.append(unboxed)
    if isinstance(parsed, list):
        return pass_.finish("change_rejected", None, parsed)
    return pass_.run(parsed)


def _containment(task: ResearchTask, request: MeasureRequest) -> tuple[Containment, str]:
    """The containment of this pass's experiments (the workspace's ``.zeroshot/`` hidden
    from them), and a note when they run without the box the run asked for."""
    containment = request.containment
    if containment.workspace_root is None:
        containment = dataclasses.replace(containment, workspace_root=Path(request.workspace))
    return experiment_containment(task, containment)


@dataclass
class _Pass:
    task: ResearchTask
    records: ResearchRecords
    request: MeasureRequest
    row: RoundPass
    containment: Containment
    notes: list[str] = field(default_factory=list)
    diff: str = ""
    building: AbstractContextManager[object] = _BUILDING
    """Held while the candidate is built and stored (see :class:`_Turn`)."""
    ahead: _IncumbentAhead | None = None
    """Shared by the candidates measured at once (see :class:`_IncumbentAhead`)."""

    def run(self, change: Change) -> Evidence:
        incumbent = self.records.read_incumbent()
        assert incumbent is not None  # the baseline is measured first
        parent = change.parent_id
        if self.records.read_manifest(parent) is None:
            return self.finish(
                "change_rejected", change, [f"the study has no candidate {parent!r} to change"]
            )
        with self.building:  # candidates measured at once are stored one at a time
            built = self.build(change)
        if isinstance(built, tuple):
            return self.finish(built[0], change, built[1])
        gate = Gate.of(self.task.spec, discriminating=change.measurement == "discriminating")
        seeds = self.seeds(gate.max_seeds)
        first = seeds[: gate.repeats]
        if built == incumbent.candidate_id:  # a re-measurement: nothing to race
            self.record_runs(built, first)
            return self.finish("measured", change, [], candidate_id=built, seeds=first)
        self.record_runs(incumbent.candidate_id, first)
        looked: list[Sequence[int]] = [first]

        def measure_look(look: Sequence[int]) -> Measured:
            if self.ahead is not None and len(looked) > 1:  # undecided after its first look
                self.ahead.start(lambda: self.record_runs(incumbent.candidate_id, seeds))
            looked.append(look)
            self.record_pair(incumbent.candidate_id, built, look)
            runs = by_seed(self.records, built)
            failed = next((runs[s].status for s in look if runs[s].status != "ok"), "")
            return _metrics(runs), _metrics(by_seed(self.records, incumbent.candidate_id)), failed

        comparison = race(
            self.task.spec,
            gate,
            seeds,
            measure_look,
            self.borrowed(incumbent.candidate_id, first),
        )
        return self.finish(
            "measured",
            change,
            [],
            candidate_id=built,
            seeds=looked[-1],
            comparison=comparison,
        )

    def build(self, change: Change) -> str | tuple[MeasureStatus, list[str]]:
        """The measured candidate's id (stored, verified), or why there is none."""
        if not ensure_bytes(self.task, self.records, change.parent_id, self.notes):
            return "parent_unverified", [n for n in self.notes if "cannot restore" in n]
        parent = self.records.read_manifest(change.parent_id)
        assert parent is not None
        with tempfile.TemporaryDirectory(prefix="zeroshot-change-") as scratch:
            before, source = Path(scratch) / "parent", Path(scratch) / "candidate"
            check = restore_candidate(self.records, change.parent_id, before)
            if not check.ok:
                return "parent_unverified", [
                    f"the restored copy of {change.parent_id} does "
                    f"not verify: {', '.join(check.problems)}"
                ]
            shutil.copytree(before, source)
            params, reasons = apply_change(self.task, change, parent.params, source)
            if reasons:
                return "change_rejected", reasons
            files = tree_hashes(source)
            changed = sorted(
                p for p in files.keys() | parent.files.keys() if files.get(p) != parent.files.get(p)
            )
            self.diff = describe_diff(before, source, changed)
            existing = self.same_bytes(content_sha256(files), change.parent_id)
            if existing is not None:
                self.notes.append(
                    f"the change leaves the bytes of {existing}: measuring it"
                    if existing != change.parent_id
                    else f"the change leaves {existing} as it is: re-measuring it"
                )
                if not ensure_bytes(self.task, self.records, existing, self.notes):
                    return "parent_unverified", [n for n in self.notes if "cannot" in n]
                return existing
            candidate_id = self.new_id()
            store_candidate(
                self.records,
                source,
                candidate_id=candidate_id,
                parent_id=change.parent_id,
                round_number=self.request.round,
                params=params,
            )
        return candidate_id

    def same_bytes(self, sha256: str, parent_id: str) -> str | None:
        """The stored candidate with these bytes (the parent first), if any."""
        candidates = self.records.candidates()
        ordered = [parent_id, *sorted(candidates)]
        return next(
            (c for c in ordered if c in candidates and candidates[c].content_sha256 == sha256), None
        )

    def new_id(self) -> str:
        first = f"c{self.request.round:03d}"
        if self.records.read_manifest(first) is None:
            return first
        name, number = f"{first}-{self.request.pass_number}", 1
        while self.records.read_manifest(name) is not None:  # a pass's other candidates
            number += 1
            name = f"{first}-{self.request.pass_number}-{number}"
        return name

    def seeds(self, count: int) -> list[int]:
        return [experiment_seed(self.request.seed, i) for i in range(count)]

    def record_runs(self, candidate_id: str, seeds: Sequence[int]) -> None:
        spec = self.task.spec
        incumbent = self.records.read_incumbent() if spec.pruner is not None else None
        pruning = (  # never the incumbent's runs
            pruning_for(spec.pruner, spec.direction, self.records.candidates(), candidate_id)
            if incumbent is not None and candidate_id != incumbent.candidate_id
            else None
        )
        record_runs(
            self.task,
            self.records,
            candidate_id,
            seeds,
            round_number=self.request.round,
            pass_id=self.request.pass_id,
            parallel=self.request.parallel,
            containment=self.containment,
            executor=executor_for(self.request.dask),
            pruning=pruning,
        )

    def record_pair(self, incumbent_id: str, candidate_id: str, seeds: Sequence[int]) -> None:
        """Both sides' missing runs of a look. On a cluster they run at once (its resources
        bound what runs together, and a look whose incumbent lacks seeds then takes one wave,
        not two); on this machine, or with a pruner (its median reads the incumbent's
        curves), the incumbent's first."""
        if not self.request.dask or self.task.spec.pruner is not None:
            self.record_runs(incumbent_id, seeds)
            self.record_runs(candidate_id, seeds)
            return
        with ThreadPoolExecutor(1, thread_name_prefix="zeroshot-incumbent") as pool:
            incumbent_runs = pool.submit(self.record_runs, incumbent_id, seeds)
            self.record_runs(candidate_id, seeds)
            incumbent_runs.result()

    def borrowed(self, incumbent_id: str, seeds: Sequence[int]) -> Borrowed | None:
        """The sigma the race may borrow while it has one seed: from the study's earlier
        comparisons at the level of the incumbent on ``seeds``."""
        values = [v for s, v in _metrics(by_seed(self.records, incumbent_id)).items() if s in seeds]
        if not values:
            return None
        return borrowed_sigma(
            study_spreads(self.task, self.records, self.request.round),
            sum(values) / len(values),
            all(v > 0 for v in values),
        )

    def finish(
        self,
        status: MeasureStatus,
        change: Change | None,
        reasons: list[str],
        *,
        candidate_id: str = "",
        seeds: Sequence[int] = (),
        comparison: Paired | None = None,
    ) -> Evidence:
        spec = self.task.spec
        incumbent = self.records.read_incumbent()
        assert incumbent is not None
        incumbent_id = incumbent.candidate_id
        runs = by_seed(self.records, candidate_id) if candidate_id else {}
        ran = [runs[s] for s in seeds if s in runs]
        against = by_seed(self.records, incumbent_id) if candidate_id else {}
        rested = [*ran, *(against[s] for s in seeds if s in against)]
        if comparison is None:
            comparison = paired(
                spec,
                seeds if candidate_id else [],
                _metrics(runs),
                _metrics(against),
                gate=Gate(max(1, len(seeds)), max(1, len(seeds))),
            )
        raced = bool(candidate_id) and candidate_id != incumbent_id and status == "measured"
        values = [r.metric for r in ran if r.metric is not None]
        experiment: ResultStatus = (
            "not_run" if not ran else next((r.status for r in ran if r.status != "ok"), "ok")
        )
        metric = sum(values) / len(values) if values else None
        lines = (
            [
                comparison.describe(spec.metric, candidate_id, incumbent_id)
                if raced
                else comparison.describe_remeasurement(spec.metric, candidate_id)
            ]
            if candidate_id
            else []
        )
        failed = next((r for r in ran if r.status != "ok"), None)
        if failed is not None:
            tail = failed.output_tail.strip().splitlines()[-1:] or [""]
            lines.append(
                f"{failed.status} (exit {failed.exit_code}, seed {failed.seed}, "
                f"{failed.duration_seconds:g} s): {tail[0][:200]}"
            )
        if status != "measured":
            lines.append(f"{status.replace('_', ' ')}: " + "; ".join(reasons))
        supports = (
            status == "measured"
            and candidate_id != incumbent_id
            and experiment == "ok"
            and comparison.n >= spec.repeats
            and comparison.decision == "better"
        )
        evidence = Evidence(
            round=self.request.round,
            pass_number=self.request.pass_number,
            status=status,
            parent_id=change.parent_id if change else "",
            candidate_id=candidate_id,
            candidate_sha256=self.sha256(candidate_id),
            incumbent_id=incumbent_id,
            measurement=change.measurement if change else "standard",
            experiment_status=experiment,
            seeds=list(comparison.seeds),
            metric_repeats=list(comparison.candidate),
            incumbent_repeats=list(comparison.incumbent),
            metric=metric,
            incumbent_metric=(
                sum(comparison.incumbent) / comparison.n if comparison.n else incumbent.metric
            ),
            gain=comparison.gain,
            noise_floor=comparison.noise_floor,
            effect_size=comparison.effect_size,
            gate_decision=comparison.decision if raced else None,
            max_seeds=comparison.max_seeds if raced else None,
            supports_adoption=supports,
            target_met=experiment == "ok" and metric is not None and spec.meets_target(metric),
            reasons=reasons,
            diff=self.diff,
            summary="\n".join([*lines, *self.notes]),
            reconsidered=bool(change and change.reconsidered),
            reconsideration_due=self.request.reconsideration_due,
            contained=all(r.contained for r in rested) if rested else None,
            self_scored=spec.scored_by_candidate,
        )
        measurements = [
            m
            for c in dict.fromkeys((candidate_id, incumbent_id))
            if c
            for m in (self.records.read_manifest(c) or _EMPTY).measurements
            if m.pass_id == self.request.pass_id
        ]
        self.records.finish_pass(
            self.request.round,
            self.row.model_copy(
                update={
                    "status": "done",
                    "evidence": evidence,
                    "measurements": measurements,
                    "notes": [*self.row.notes, *self.notes],
                }
            ),
        )
        render_records(self.task, self.records)
        return evidence

    def sha256(self, candidate_id: str) -> str:
        manifest = self.records.read_manifest(candidate_id) if candidate_id else None
        return manifest.content_sha256 if manifest else ""


_EMPTY = CandidateManifest(
    candidate_id="", parent_id="", round=0, params={}, files={}, content_sha256=""
)


def by_seed(records: ResearchRecords, candidate_id: str) -> dict[int, ExperimentResult]:
    """The candidate's recorded runs, by seed (the first run of each seed)."""
    manifest = records.read_manifest(candidate_id)
    found: dict[int, ExperimentResult] = {}
    for measurement in manifest.measurements if manifest else []:
        found.setdefault(measurement.experiment.seed, measurement.experiment)
    return found


def _metrics(runs: dict[int, ExperimentResult]) -> dict[int, float]:
    return {seed: run.metric for seed, run in runs.items() if run.metric is not None}


_recorders: dict[tuple[Path, str], threading.Lock] = {}
_recorders_lock = threading.Lock()


def _recording(records: ResearchRecords, candidate_id: str) -> threading.Lock:
    """The lock of one candidate's runs in this process: candidates measured at once
    share the incumbent, whose missing seeds one of them runs while the others wait."""
    with _recorders_lock:
        return _recorders.setdefault((records.root, candidate_id), threading.Lock())


def record_runs(
    task: ResearchTask,
    records: ResearchRecords,
    candidate_id: str,
    seeds: Sequence[int],
    *,
    round_number: int,
    pass_id: str,
    parallel: int | None = None,
    containment: Containment | None = None,
    executor: ExperimentExecutor | None = None,
    pruning: Pruning | None = None,
) -> None:
    """Run the experiment of ``candidate_id`` on each of ``seeds`` it has no recorded run
    for, on copies of its stored bytes checked against its content hash, through
    ``executor`` (default: this machine), and record the runs in its manifest with that
    hash: one run per seed, whatever the executor retried. With ``pruning`` (never for
    the incumbent), a run its pruner stops is recorded ``pruned``."""
    with _recording(records, candidate_id):  # one candidate's seeds run once, not per pass
        missing = [s for s in dict.fromkeys(seeds) if s not in by_seed(records, candidate_id)]
        if not missing:
            return
        with tempfile.TemporaryDirectory(prefix="zeroshot-measured-") as scratch:
            source = Path(scratch) / "source"
            check = restore_candidate(records, candidate_id, source)
            if not check.ok:
                raise CandidateChanged(
                    f"the stored bytes of {candidate_id} no longer match its content hash "
                    f"({', '.join(check.problems[:5])}); nothing was measured"
                )
            runs = (executor or LocalExecutor()).run(
                task,
                source,
                missing,
                parallel=parallel,
                containment=containment or Containment(),
                pruning=pruning,
            )
        manifest = records.read_manifest(candidate_id)
        assert manifest is not None
        recorded = {m.experiment.seed for m in manifest.measurements}
        new = [
            Measurement(
                candidate_id=candidate_id,
                round=round_number,
                experiment=r,
                pass_id=pass_id,
                content_sha256=manifest.content_sha256,
            )
            for r in runs
            if r.seed not in recorded  # another execution recorded it meanwhile: keep the first
        ]
        records.write_manifest(
            manifest.model_copy(update={"measurements": [*manifest.measurements, *new]})
        )


def study_spreads(task: ResearchTask, records: ResearchRecords, before: int) -> list[Spread]:
    """The spread of the paired differences of each of the study's comparisons of earlier
    rounds on two seeds or more, with the level it was seen at (see ``borrowed_sigma``)."""
    spreads = []
    for number, record in records.snapshot().rounds.items():
        if number >= before:
            continue
        for row in record.passes:
            evidence = row.evidence
            if (
                evidence is None
                or evidence.candidate_id == evidence.incumbent_id
                or len(evidence.seeds) < 2
            ):
                continue
            d = differences(task.spec, evidence.metric_repeats, evidence.incumbent_repeats)
            values = [*evidence.metric_repeats, *evidence.incumbent_repeats]
            spreads.append(
                Spread(
                    sigma=pooled_sigma([d]) or 0.0,
                    scale=sum(evidence.incumbent_repeats) / len(evidence.incumbent_repeats),
                    dof=len(d) - 1,
                    positive=all(v > 0 for v in values),
                )
            )
    return spreads


def ensure_bytes(
    task: ResearchTask, records: ResearchRecords, candidate_id: str, notes: list[str]
) -> bool:
    """Verify a stored candidate; rebuild it from the task and its params when damaged."""
    check = verify_candidate(records, candidate_id)
    if check.ok:
        return True
    notes.append(
        f"stored bytes of {candidate_id} do not match its manifest: {', '.join(check.problems)}"
    )
    repaired = repair_candidate(records, task, candidate_id)
    notes.append(
        f"rebuilt {candidate_id} from the task and its params; verified"
        if repaired.ok
        else f"cannot restore {candidate_id}: {', '.join(repaired.problems)}"
    )
    return repaired.ok


def measure_baseline(
    task: ResearchTask,
    records: ResearchRecords,
    seed: int,
    pass_id: str,
    parallel: int | None = None,
    *,
    containment: Containment | None = None,
    executor: ExperimentExecutor | None = None,
) -> None:
    """Round 0: store the task's starting candidate and measure it as the first incumbent.

    A run that finds an earlier run's failed baseline (its row stays in round 0) stores the
    starting candidate anew and measures it again; a retry within one run (``pass_id``)
    keeps what its lost execution recorded."""
    notes = ["the task's starting candidate, measured as the baseline"]
    records.write_text(records.charter_path, charter(task))
    started = records.read_round(0)
    mine = started is not None and any(p.pass_id == pass_id for p in started.passes)
    if not mine:
        records.begin_pass(0, RoundPass(status="started", pass_id=pass_id))
    if (
        not mine
        or records.read_manifest(BASELINE_ID) is None
        or not ensure_bytes(task, records, BASELINE_ID, notes)
    ):
        store_candidate(
            records,
            task.candidate_dir,
            candidate_id=BASELINE_ID,
            parent_id="",
            round_number=0,
            params=task.start_params,
        )
    seeds = [experiment_seed(seed, i) for i in range(task.spec.repeats)]
    record_runs(
        task,
        records,
        BASELINE_ID,
        seeds,
        round_number=0,
        pass_id=pass_id,
        parallel=parallel,
        containment=containment,
        executor=executor,
    )
    manifest = records.read_manifest(BASELINE_ID)
    assert manifest is not None
    runs = by_seed(records, BASELINE_ID)
    measured = [s for s in seeds if runs[s].metric is not None]
    values = [runs[s].metric or 0.0 for s in measured]
    if not values:
        records.finish_pass(
            0,
            RoundPass(
                status="started", pass_id=pass_id, notes=notes, measurements=manifest.measurements
            ),
        )
        raise BaselineFailed(manifest)
    metric = sum(values) / len(values)
    evidence = Evidence(
        round=0,
        pass_number=1,
        status="measured",
        parent_id="",
        candidate_id=BASELINE_ID,
        candidate_sha256=manifest.content_sha256,
        incumbent_id=BASELINE_ID,
        measurement="standard",
        experiment_status=manifest.status,
        seeds=measured,
        metric_repeats=values,
        incumbent_repeats=values,
        metric=metric,
        incumbent_metric=metric,
        gain=0.0,
        noise_floor=0.0,
        supports_adoption=False,
        target_met=task.spec.meets_target(metric),
        reasons=[],
        diff="",
        summary="\n".join(notes),
        reconsidered=False,
        reconsideration_due=False,
        contained=all(runs[s].contained for s in seeds),
        self_scored=task.spec.scored_by_candidate,
    )
    records.finish_pass(
        0,
        RoundPass(
            status="done",
            pass_id=pass_id,
            evidence=evidence,
            measurements=manifest.measurements,
            notes=notes,
        ),
    )
    records.decide(
        ResearchResult(
            round=0,
            parent_id="",
            candidate_id=BASELINE_ID,
            strategy="baseline",
            approach="baseline",
            params=manifest.params,
            measure_status="measured",
            experiment_status=manifest.status,
            metric=metric,
            metric_repeats=values,
            incumbent_id="",
            gain=0.0,
            noise_floor=0.0,
            evidence=evidence.summary,
            disposition="adopt",
            justification="the starting candidate is the first incumbent",
            bytes_verified=True,
            candidate_sha256=manifest.content_sha256,
            reconsidered=False,
            reconsideration_due=False,
            contained=evidence.contained,
            self_scored=evidence.self_scored,
        )
    )
    records.write_incumbent(
        IncumbentRecord(  # last: it marks the research as started
            candidate_id=BASELINE_ID,
            adopted_round=0,
            metric=metric,
            content_sha256=manifest.content_sha256,
        )
    )
    render_records(task, records)
