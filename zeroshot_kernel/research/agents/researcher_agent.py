"""The researcher agent: the only writer of the research records.

One call is one pass over a round: choose a proposal and a parent, restore and verify the
parent's bytes, build and store the candidate, run the real experiment (repeats for the
noise floor), and propose a disposition. With corrections it makes a new pass over the same
round: re-verify (rebuilding damaged bytes), take a discriminating measurement of both the
candidate and the incumbent, and decide again on the larger evidence.

The disposition takes effect in ``incumbent.json`` at once; a review that disagrees sends
corrections back here, and the correcting pass rewrites it, so once a round is accepted the
records say what the review accepted.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from zeroshot_kernel.research.agents.seeding import derive_seed
from zeroshot_kernel.research.agents.selection import Plan, plan_round
from zeroshot_kernel.research.candidates import (
    repair_candidate,
    restore_candidate,
    store_candidate,
    verify_candidate,
    write_params,
)
from zeroshot_kernel.research.evidence import Comparison, compare, fmt
from zeroshot_kernel.research.experiment import run_repeats
from zeroshot_kernel.research.protocol import (
    REMEASURE,
    Disposition,
    ResearcherInput,
    ResearchResult,
    ScoutProposal,
)
from zeroshot_kernel.research.records import (
    CandidateManifest,
    IncumbentRecord,
    Measurement,
    PassPlan,
    ResearchRecords,
    RoundPass,
    RoundRecord,
)
from zeroshot_kernel.research.render import backlog, charter, summary
from zeroshot_kernel.research.studies import records_for
from zeroshot_kernel.research.task import ResearchTask, resolve_task

BASELINE_ID = "c000"


def candidate_id_for(round_number: int) -> str:
    return f"c{round_number:03d}"


def researcher(request: ResearcherInput) -> ResearchResult:
    """Run one pass of ``request.round`` and return its result (also written to the records)."""
    task = resolve_task(request.task, request.workspace)
    records = records_for(request.workspace, request.study)
    if not records.initialised():
        _measure_baseline(task, records, request.seed)
    previous = records.read_round(request.round)
    recorded = _recorded_pass(previous, request.pass_id)
    if recorded is not None and recorded.result is not None:
        _render(task, records)  # the pass finished; only its execution was lost
        return recorded.result
    if recorded is not None and recorded.plan is not None:
        work = _resumed(recorded, request)
        return _run_pass(task, records, work, request.seed, resumed=True)
    if request.corrections.strip() and previous is not None and previous.passes:
        last = previous.passes[-1]
        work = _Pass(
            round=request.round, corrections=request.corrections, proposals=last.proposals,
            proposal=last.proposal, parent_id=last.parent_id, candidate_id=last.candidate_id,
            incumbent_before=last.incumbent_before,
            remeasure=last.candidate_id == last.incumbent_before,
            reconsidered=bool(last.result and last.result.reconsidered),
            repeats=task.spec.repeats, build=False, racing=False, discriminating=True,
            stop_check=bool(last.result and last.result.disposition == "stop"),
            reconsideration_due=request.reconsideration_due, pass_id=request.pass_id,
        )
    else:
        work = _plan(task, records, request)
    return _run_pass(task, records, work, request.seed)


def _recorded_pass(record: RoundRecord | None, pass_id: str | None) -> RoundPass | None:
    """The records' row of this pass, when an earlier execution of it got that far."""
    if record is None or pass_id is None:
        return None
    return next((p for p in record.passes if p.pass_id == pass_id), None)


def _resumed(row: RoundPass, request: ResearcherInput) -> _Pass:
    """A started pass, carried on as planned: what it already measured is kept."""
    assert row.plan is not None
    return _Pass(
        round=request.round, corrections=row.corrections, proposals=row.proposals,
        proposal=row.proposal, parent_id=row.parent_id, candidate_id=row.candidate_id,
        incumbent_before=row.incumbent_before,
        reconsideration_due=request.reconsideration_due, pass_id=row.pass_id,
        notes=[*row.notes, "carried on after its earlier execution was lost; measurements "
                           "it had recorded are kept, not repeated"],
        **row.plan.model_dump(by_alias=False),
    )


@dataclass
class _Pass:
    """What one pass is doing, gathered as it goes."""

    round: int
    corrections: str
    proposals: list[ScoutProposal]
    proposal: ScoutProposal | None
    parent_id: str
    candidate_id: str
    incumbent_before: str
    remeasure: bool
    reconsidered: bool
    repeats: int
    build: bool
    """Build the candidate from its parent even if an earlier pass stored one."""
    racing: bool
    discriminating: bool
    stop_check: bool
    reconsideration_due: bool = False
    pass_id: str | None = None
    notes: list[str] = field(default_factory=list)
    measurements: list[Measurement] = field(default_factory=list)

    def row(self, result: ResearchResult | None = None) -> RoundPass:
        return RoundPass(
            status="started" if result is None else "done", corrections=self.corrections,
            proposals=self.proposals, proposal=self.proposal, parent_id=self.parent_id,
            candidate_id=self.candidate_id, incumbent_before=self.incumbent_before,
            measurements=self.measurements, notes=self.notes, result=result,
            pass_id=self.pass_id,
            plan=PassPlan(remeasure=self.remeasure, reconsidered=self.reconsidered,
                          repeats=self.repeats, build=self.build, racing=self.racing,
                          discriminating=self.discriminating, stop_check=self.stop_check),
        )


def _plan(task: ResearchTask, records: ResearchRecords, request: ResearcherInput) -> _Pass:
    state = records.snapshot()
    incumbent_id = state.incumbent_before(request.round) or BASELINE_ID
    incumbent = state.candidates[incumbent_id]
    if incumbent.metric is not None and task.spec.meets_target(incumbent.metric):
        plan = Plan(
            proposal=ScoutProposal(strategy="challenge", approach=REMEASURE,
                                   params=incumbent.params,
                                   rationale="confirm the incumbent meets the target"),
            params=incumbent.params, parent_id=incumbent_id, remeasure=True,
            reconsidered=False, repeats=task.spec.repeats,
            why=f"the incumbent {incumbent_id} meets the target; confirming before stopping",
        )
    else:
        plan = plan_round(task, state, request.proposals, incumbent_id=incumbent_id,
                          round_number=request.round,
                          reconsideration_due=request.reconsideration_due)
    chosen = plan.proposal.model_copy(update={"params": plan.params})
    return _Pass(
        round=request.round, corrections=request.corrections, proposals=request.proposals,
        proposal=chosen, parent_id=plan.parent_id,
        candidate_id=incumbent_id if plan.remeasure else candidate_id_for(request.round),
        incumbent_before=incumbent_id, remeasure=plan.remeasure,
        reconsidered=plan.reconsidered, repeats=plan.repeats, build=not plan.remeasure,
        racing=not (plan.remeasure or plan.reconsidered),
        discriminating=False, stop_check=plan.remeasure and task.spec.target is not None,
        reconsideration_due=request.reconsideration_due, pass_id=request.pass_id,
        notes=[plan.why],
    )


def _run_pass(
    task: ResearchTask, records: ResearchRecords, work: _Pass, seed: int, *,
    resumed: bool = False,
) -> ResearchResult:
    if not resumed:
        records.begin_pass(work.round, work.row())  # the row exists before any restore
    if work.corrections:
        work.notes.append(f"addressing corrections: {work.corrections.strip()}")
    verified = _ensure_bytes(task, records, work.parent_id, work.notes)
    built = records.read_manifest(work.candidate_id)
    # A resumed pass keeps the candidate its lost execution built: rebuilding would drop
    # the measurements recorded since.
    kept = resumed and built is not None and built.round == work.round
    if verified and (built is None or (work.build and not kept)):
        _build(task, records, work)
    if verified and work.candidate_id != work.parent_id:
        verified = _ensure_bytes(task, records, work.candidate_id, work.notes)
    if verified:
        _measure(task, records, work, work.candidate_id, work.repeats, seed)
        if work.discriminating and not work.remeasure and \
                _ensure_bytes(task, records, work.incumbent_before, work.notes):
            _measure(task, records, work, work.incumbent_before, task.spec.repeats, seed)
    return _finish(task, records, work, verified)


def _build(task: ResearchTask, records: ResearchRecords, work: _Pass) -> None:
    """Restore the parent into a scratch directory, apply the proposal, store the candidate."""
    assert work.proposal is not None
    with tempfile.TemporaryDirectory(prefix="zeroshot-candidate-") as scratch:
        source = Path(scratch) / "source"
        check = restore_candidate(records, work.parent_id, source)
        if not check.ok:
            raise RuntimeError(f"parent {work.parent_id} changed while restoring: {check}")
        write_params(source, task, work.proposal.params)
        store_candidate(records, source, candidate_id=work.candidate_id,
                        parent_id=work.parent_id, round_number=work.round,
                        params=work.proposal.params)


def _ensure_bytes(
    task: ResearchTask, records: ResearchRecords, candidate_id: str, notes: list[str]
) -> bool:
    """Verify a stored candidate; rebuild it from the task and its params when damaged."""
    check = verify_candidate(records, candidate_id)
    if check.ok:
        return True
    notes.append(f"stored bytes of {candidate_id} do not match its manifest: "
                 f"{', '.join(check.problems)}")
    repaired = repair_candidate(records, task, candidate_id)
    notes.append(f"rebuilt {candidate_id} from the task and its params; verified"
                 if repaired.ok else
                 f"cannot restore {candidate_id}: {', '.join(repaired.problems)}")
    return repaired.ok


def _measure(
    task: ResearchTask, records: ResearchRecords, work: _Pass, candidate_id: str, count: int,
    seed: int,
) -> None:
    """Run ``count`` more measurements; when racing, stop after one that is clearly worse."""
    manifest = records.read_manifest(candidate_id)
    assert manifest is not None
    done = _recorded_by_pass(records, work, manifest)
    work.measurements.extend(done)
    start = len(manifest.measurements) - len(done)
    seeds = [derive_seed(seed, "experiment", candidate_id, start + i) for i in range(count)]
    first, rest = (seeds[:1], seeds[1:]) if work.racing else (seeds, [])
    manifest = _record_runs(task, records, work, manifest, first[len(done):])
    if rest and len(done) <= len(first):
        early = _early_stop(task, records, work, manifest)
        if early:
            work.notes.append(early)
            return
    _record_runs(task, records, work, manifest, rest[max(0, len(done) - len(first)):])


def _recorded_by_pass(
    records: ResearchRecords, work: _Pass, manifest: CandidateManifest
) -> list[Measurement]:
    """Measurements of ``manifest`` this pass already recorded: those of its round that no
    earlier pass of the round lists (none, unless an execution of this pass was lost)."""
    record = records.read_round(work.round)
    earlier = record.passes[:-1] if record else []
    listed = sum(m.candidate_id == manifest.candidate_id for p in earlier for m in p.measurements)
    return [m for m in manifest.measurements if m.round == work.round][listed:]


def _record_runs(
    task: ResearchTask, records: ResearchRecords, work: _Pass, manifest: CandidateManifest,
    seeds: list[int],
) -> CandidateManifest:
    if not seeds:
        return manifest
    runs = run_repeats(task, records.source_dir(manifest.candidate_id), seeds)
    new = [Measurement(candidate_id=manifest.candidate_id, round=work.round, experiment=r)
           for r in runs]
    updated = manifest.model_copy(update={"measurements": [*manifest.measurements, *new]})
    records.write_manifest(updated)
    work.measurements.extend(new)
    return updated


def _early_stop(
    task: ResearchTask, records: ResearchRecords, work: _Pass, manifest: CandidateManifest
) -> str:
    """Why further repeats are pointless (a failed run, or clearly worse), or ``""``."""
    if manifest.status != "ok":
        return f"stopped after a {manifest.status} run; no further repeats"
    comparison = compare(task.spec, records.candidates(), work.candidate_id,
                         work.incumbent_before)
    if comparison.worse_beyond_noise:
        return ("stopped after one run: worse than the incumbent beyond the noise floor ("
                + comparison.describe(task.spec.metric) + ")")
    return ""


def _finish(
    task: ResearchTask, records: ResearchRecords, work: _Pass, verified: bool
) -> ResearchResult:
    spec = task.spec
    state = records.snapshot()
    manifest = state.candidates.get(work.candidate_id)
    comparison = compare(spec, state.candidates, work.candidate_id, work.incumbent_before)
    disposition, justification = _decide(task, work, manifest, comparison, verified)
    evidence = [comparison.describe(spec.metric)]
    if manifest is not None and manifest.status != "ok":
        failed = next(m.experiment for m in manifest.measurements
                      if m.experiment.status != "ok")
        tail = failed.output_tail.strip().splitlines()[-1:] or [""]
        evidence.append(f"{failed.status} (exit {failed.exit_code}, seed {failed.seed}, "
                        f"{failed.duration_seconds:g} s): {tail[0][:200]}")
    evidence += work.notes
    proposal = work.proposal
    result = ResearchResult(
        round=work.round, parent_id=work.parent_id, candidate_id=work.candidate_id,
        strategy=proposal.strategy if proposal else "baseline",
        approach=proposal.approach if proposal else "baseline",
        params=manifest.params if manifest else (proposal.params if proposal else {}),
        experiment_status=manifest.status if manifest else "no_metric",
        metric=manifest.metric if manifest else None,
        metric_repeats=manifest.values if manifest else [],
        incumbent_id=work.incumbent_before, incumbent_metric=comparison.incumbent_mean,
        gain=comparison.gain, noise_floor=comparison.noise_floor, evidence="\n".join(evidence),
        disposition=disposition, justification=justification, bytes_verified=verified,
        candidate_sha256=manifest.content_sha256 if manifest else "",
        reconsidered=work.reconsidered, reconsideration_due=work.reconsideration_due,
    )
    incumbent_id = work.candidate_id if disposition == "adopt" else work.incumbent_before
    incumbent = state.candidates[incumbent_id]
    records.write_incumbent(IncumbentRecord(
        candidate_id=incumbent_id, adopted_round=incumbent.round, metric=incumbent.metric,
        content_sha256=incumbent.content_sha256,
    ))
    records.finish_pass(work.round, work.row(result))
    _render(task, records)
    return result


def _decide(
    task: ResearchTask, work: _Pass, manifest: CandidateManifest | None,
    comparison: Comparison, verified: bool,
) -> tuple[Disposition, str]:
    spec = task.spec
    if not verified or manifest is None:
        return "reject", "the bytes could not be verified, so nothing was measured or adopted"
    if manifest.status != "ok":
        return "reject", (f"the experiment ended {manifest.status}; the failure is recorded and "
                          f"the incumbent {work.incumbent_before} is kept")
    if work.remeasure:
        if work.stop_check and manifest.metric is not None and spec.meets_target(manifest.metric):
            return "stop", (f"the incumbent {work.candidate_id} meets the charter's target: "
                            f"{spec.metric} {fmt(manifest.metric)} over {len(manifest.values)} "
                            f"measurements against target {fmt(spec.target)}")
        return "reject", (f"re-measured the incumbent {work.candidate_id}: {spec.metric} "
                          f"{fmt(manifest.metric)} over {len(manifest.values)} measurements; "
                          f"nothing new to adopt")
    if comparison.incumbent_mean is None:
        return "adopt", (f"the incumbent {work.incumbent_before} has no successful measurement "
                         f"and {work.candidate_id} has")
    if comparison.beats_noise:
        return "adopt", (f"gain {fmt(comparison.gain)} beats the noise floor "
                         f"{fmt(comparison.noise_floor)}")
    if comparison.gain > 0:
        return "reject", (f"gain {fmt(comparison.gain)} is within the noise floor "
                          f"{fmt(comparison.noise_floor)}; not a real improvement yet")
    return "reject", (f"no improvement: {spec.metric} {fmt(comparison.candidate_mean)} against "
                      f"the incumbent's {fmt(comparison.incumbent_mean)}")


class BaselineFailed(RuntimeError):
    """The task's starting candidate produced no metric: there is nothing to improve on,
    and the run ends saying why (the experiment's own last lines)."""

    def __init__(self, manifest: CandidateManifest) -> None:
        failed = [m.experiment for m in manifest.measurements if m.experiment.status != "ok"]
        last = failed[-1] if failed else None
        exit_code = "" if last is None or last.exit_code is None else f", exit {last.exit_code}"
        tail = "" if last is None else " | ".join(
            line.strip() for line in last.output_tail.strip().splitlines()[-3:])
        super().__init__(f"the baseline experiment failed ({manifest.status}{exit_code}): "
                         f"{tail or 'no output'}")


def _measure_baseline(task: ResearchTask, records: ResearchRecords, seed: int) -> None:
    """Round 0: store the task's starting candidate and measure it as the first incumbent."""
    records.write_text(records.charter_path, charter(task))
    work = _Pass(
        round=0, corrections="", proposals=[], proposal=None, parent_id="",
        candidate_id=BASELINE_ID, incumbent_before=BASELINE_ID, remeasure=False,
        reconsidered=False, repeats=task.spec.repeats, build=False, racing=False,
        discriminating=False, stop_check=False,
        notes=["the task's starting candidate, measured as the baseline"],
    )
    started = records.read_round(0)
    if started is None or not started.passes:
        records.begin_pass(0, work.row())
    if records.read_manifest(BASELINE_ID) is None or \
            not _ensure_bytes(task, records, BASELINE_ID, work.notes):
        store_candidate(records, task.candidate_dir, candidate_id=BASELINE_ID, parent_id="",
                        round_number=0, params=task.start_params)
    _measure(task, records, work, BASELINE_ID, task.spec.repeats, seed)
    state = records.snapshot()
    manifest = state.candidates[BASELINE_ID]
    if manifest.metric is None:
        records.finish_pass(0, work.row())
        raise BaselineFailed(manifest)
    comparison = compare(task.spec, state.candidates, BASELINE_ID, BASELINE_ID)
    result = ResearchResult(
        round=0, parent_id="", candidate_id=BASELINE_ID, strategy="baseline",
        approach="baseline", params=manifest.params, experiment_status=manifest.status,
        metric=manifest.metric, metric_repeats=manifest.values, incumbent_id="",
        gain=0.0, noise_floor=comparison.noise_floor, evidence="\n".join(work.notes),
        disposition="adopt", justification="the starting candidate is the first incumbent",
        bytes_verified=True, candidate_sha256=manifest.content_sha256, reconsidered=False,
        reconsideration_due=False,
    )
    records.finish_pass(0, work.row(result))
    records.write_incumbent(IncumbentRecord(  # last: it marks the research as started
        candidate_id=BASELINE_ID, adopted_round=0, metric=manifest.metric,
        content_sha256=manifest.content_sha256,
    ))
    _render(task, records)


def _render(task: ResearchTask, records: ResearchRecords) -> None:
    state = records.snapshot()
    records.write_text(records.summary_path, summary(task, state))
    records.write_text(records.backlog_path, backlog(state))
