"""One candidate of a study, as a reader wants it: its source, its change against its
parent, its measurements and the decision on it, all from the study's records.

The source is the candidate's recorded bytes, shown only once they were checked against
its manifest's hashes (read as ``restore`` reads them, without following a link; a
mismatch is reported, not shown as the candidate). The diff is the one the trusted measure
step recorded for the change (the same text the rounds table shows), or, when none was
recorded, one made from the parent's and the candidate's verified recorded bytes. The
reviewer's verdict and reason live in the ledger, not in the records: :func:`ledger_review`
finds them for a round when a client is at hand.

Example::

    from zeroshot_kernel.auto_research.candidate_detail import candidate_detail

    detail = candidate_detail(".", "branin", "c002")
    print(detail.diff)
    print(detail.mean, detail.std, detail.n, detail.review and detail.review.decision)
"""

from __future__ import annotations

import math
import os
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zeroshot_kernel.auto_research.candidates import RecordedSource, read_candidate
from zeroshot_kernel.auto_research.change import diff_contents
from zeroshot_kernel.auto_research.experiment import status_words
from zeroshot_kernel.auto_research.noise_floor import decision_text, paired_seeds
from zeroshot_kernel.auto_research.records import ResearchRecords, RoundRecord
from zeroshot_kernel.auto_research.studies.catalog import records_for
from zeroshot_kernel.auto_research.task import ParamValue
from zeroshot_kernel.exceptions import NotFound
from zeroshot_kernel.ledger.errors import RunNotFound

if TYPE_CHECKING:
    from zeroshot_kernel.client import Client

MAX_FILE_CHARS = 64_000
"""Characters of one file shown (the rest is cut, and says so)."""
MAX_SOURCE_CHARS = 256_000
"""Characters of all files shown together; later files are listed but not read."""


class CandidateNotFound(NotFound):
    """The study has no such candidate (or no candidate made in that round)."""


@dataclass(frozen=True)
class SourceFile:
    path: str
    """Relative POSIX path inside the candidate."""
    text: str
    """The file's text (cut to :data:`MAX_FILE_CHARS`; ``""`` for binary or unread files)."""
    size: int
    """Bytes on disk."""
    truncated: bool = False
    binary: bool = False
    shown: bool = True
    """False when the view's size budget was spent before this file."""


@dataclass(frozen=True)
class SeedRun:
    """One measurement of the candidate: an experiment run on one seed."""

    seed: int
    value: float | None
    status: str
    round: int
    duration_s: float
    contained: bool = False
    """Whether it ran in a box."""
    pruned: str = ""
    """Where and why its pruner stopped it (status ``pruned``), with its last value."""


@dataclass(frozen=True)
class Review:
    """What the round that made the candidate decided, and why."""

    round: int
    strategy: str
    approach: str
    rationale: str
    """The researcher's rationale for the change."""
    passes: int
    corrections: tuple[str, ...]
    """The reviewer's corrections, one per pass it sent back (oldest first)."""
    measure_status: str
    decision: str
    """``adopt``, ``reject`` or ``stop``; ``""`` while the round is undecided."""
    justification: str
    """The trusted adoption's reason, with the gain and noise floor it saw."""
    gain: float | None
    noise_floor: float | None
    effect_size: float | None
    supports_adoption: bool | None
    """Whether the measured gain beat the noise floor in the task's direction."""
    incumbent_id: str
    """The incumbent the candidate was compared against."""
    incumbent_metric: float | None
    evidence: str
    """The measure step's summary of the evidence."""
    verdict: str = ""
    """The reviewer's closing verdict (from the ledger; ``""`` when not known)."""
    reason: str = ""
    """The reviewer's reason (from the ledger; ``""`` when not known)."""
    seeds: int = 0
    """The paired seeds the evidence rests on."""
    gate_decision: str | None = None
    """How the gate's race over paired seeds ended (``None``: not raced)."""
    max_seeds: int | None = None
    """The race's budget of paired seeds."""

    @property
    def noise_decision(self) -> str:
        """The noise-floor decision in words."""
        if self.gain is None or self.noise_floor is None:
            return "not compared: no paired measurement"
        beats = (
            self.supports_adoption
            if self.supports_adoption is not None
            else self.gain > self.noise_floor
        )
        word = "beats" if beats else "does not beat"
        seeds = f" on {paired_seeds(self.seeds)}" if self.seeds else ""
        race = (
            f": {decision_text(self.gate_decision, self.seeds, self.max_seeds)}"
            if self.gate_decision
            else ""
        )
        return (
            f"gain {self.gain:.4g} {word} the noise floor {self.noise_floor:.4g} "
            f"against {self.incumbent_id}{seeds}{race}"
        )


@dataclass(frozen=True)
class CandidateDetail:
    study: str
    candidate_id: str
    parent_id: str
    """``""`` for the task's starting candidate."""
    round: int
    params: dict[str, ParamValue]
    content_sha256: str
    verified: bool
    """Whether the recorded bytes match the manifest (``files`` is empty when not)."""
    problems: tuple[str, ...]
    files: tuple[SourceFile, ...]
    diff: str
    """The change against the parent as a unified diff (``""`` for the starting candidate)."""
    measurements: tuple[SeedRun, ...]
    review: Review | None
    """``None`` for the starting candidate, measured as the baseline."""
    incumbent: bool
    """Whether it is the study's incumbent now."""
    self_scored: bool = False
    """Its metric came from its own code (a code task without a scorer)."""

    @property
    def uncontained(self) -> bool:
        """One of its measurements ran without a box."""
        return any(not m.contained for m in self.measurements)

    @property
    def values(self) -> list[float]:
        return [m.value for m in self.measurements if m.value is not None and m.status == "ok"]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float | None:
        values = self.values
        return sum(values) / len(values) if values else None

    @property
    def std(self) -> float | None:
        """The sample standard deviation of the measurements (``None`` below two)."""
        values = self.values
        return statistics.stdev(values) if len(values) >= 2 else None


@dataclass(frozen=True)
class CandidateChoice:
    """One entry of a candidate picker."""

    candidate_id: str
    round: int
    metric: float | None
    decision: str
    label: str


def candidate_choices(workspace: str | os.PathLike[str], study: str) -> list[CandidateChoice]:
    """The study's candidates, in the order they were made, labelled for a picker
    (``round 2 · c002 · 8.879 · adopted``)."""
    records = records_for(workspace, study)
    state = records.snapshot()
    choices = []
    for manifest in sorted(state.candidates.values(), key=lambda m: (m.round, m.candidate_id)):
        record = state.rounds.get(manifest.round)
        result = record.result if record is not None else None
        decision = (
            "baseline"
            if not manifest.parent_id
            else ""
            if result is None or result.candidate_id != manifest.candidate_id
            else {"adopt": "adopted", "reject": "rejected"}.get(
                result.disposition, result.disposition
            )
        )
        metric = manifest.metric
        shown = "-" if metric is None else f"{metric:.4g}"
        parts = [f"round {manifest.round}", manifest.candidate_id, shown]
        if manifest.status != "ok":
            parts.append(status_words(manifest.status))
        if decision:
            parts.append(decision)
        if state.incumbent is not None and state.incumbent.candidate_id == manifest.candidate_id:
            parts.append("incumbent")
        choices.append(
            CandidateChoice(
                manifest.candidate_id, manifest.round, metric, decision, " · ".join(parts)
            )
        )
    return choices


def candidate_for_round(workspace: str | os.PathLike[str], study: str, round_number: int) -> str:
    """The candidate made in ``round_number`` (the round's decided candidate, else the one
    its last pass measured); :class:`CandidateNotFound` when it made none."""
    records = records_for(workspace, study)
    if not records.root.is_dir():
        raise CandidateNotFound(f"no study {study!r} in {records.workspace}")
    record = records.read_round(round_number)
    if record is not None and record.result is not None and record.result.candidate_id:
        return record.result.candidate_id
    if record is not None:
        for row in reversed(record.passes):
            if row.evidence is not None and row.evidence.candidate_id:
                return row.evidence.candidate_id
    made = [m.candidate_id for m in records.candidates().values() if m.round == round_number]
    if made:
        return sorted(made)[-1]
    raise CandidateNotFound(f"round {round_number} of study {study!r} made no candidate")


def candidate_detail(
    workspace: str | os.PathLike[str], study: str, candidate: str, *, client: Client | None = None
) -> CandidateDetail:
    """Everything the records say about ``candidate``; with ``client``, the reviewer's
    verdict and reason from the ledger too."""
    records = records_for(workspace, study)
    manifest = records.read_manifest(candidate)
    if manifest is None:
        raise CandidateNotFound(f"study {study!r} has no candidate {candidate!r}")
    recorded = read_candidate(records, candidate)
    files = _files(recorded)
    record = records.read_round(manifest.round)
    review = _review(record, candidate) if manifest.parent_id else None
    if review is not None and client is not None:
        verdict, reason = ledger_review(client, records, review.round)
        review = _with_verdict(review, verdict, reason)
    incumbent = records.read_incumbent()
    return CandidateDetail(
        study=study,
        candidate_id=candidate,
        parent_id=manifest.parent_id,
        round=manifest.round,
        params=dict(manifest.params),
        content_sha256=manifest.content_sha256,
        verified=recorded.ok,
        problems=tuple(recorded.problems),
        files=files,
        diff=_diff(records, recorded, record) if manifest.parent_id else "",
        measurements=tuple(
            SeedRun(
                seed=m.experiment.seed,
                value=m.experiment.metric,
                status=m.experiment.status,
                round=m.round,
                duration_s=m.experiment.duration_seconds,
                contained=m.experiment.contained,
                pruned=m.experiment.pruned.describe() if m.experiment.pruned else "",
            )
            for m in manifest.measurements
        ),
        review=review,
        incumbent=incumbent is not None and incumbent.candidate_id == candidate,
        self_scored=record is not None
        and any(p.evidence.self_scored for p in record.passes if p.evidence is not None),
    )


def ledger_review(client: Client, records: ResearchRecords, round_number: int) -> tuple[str, str]:
    """The reviewer's closing verdict and reason for ``round_number`` of the study, read
    from the ledger run that decided it; ``("", "")`` when the ledger does not have it."""
    from zeroshot_kernel.auto_research.views import load_research_view

    try:
        study = records.read_study()
    except (OSError, ValueError):
        return "", ""
    if study is None:
        return "", ""
    earlier = [
        (offset, run_id) for run_id, offset in study.run_offsets.items() if offset < round_number
    ]
    for _, run_id in sorted(earlier, reverse=True):
        try:
            view = load_research_view(client.ledger, run_id)
        except (RunNotFound, OSError, ValueError):  # a run this ledger does not hold
            continue
        for round_view in view.rounds:
            if round_view.round == round_number:
                return round_view.verdict, round_view.reason
    return "", ""


def _review(record: RoundRecord | None, candidate: str) -> Review | None:
    if record is None:
        return None
    rows = [
        p for p in record.passes if p.evidence is not None and p.evidence.candidate_id == candidate
    ]
    row = rows[-1] if rows else None
    evidence = row.evidence if row is not None else None
    change = row.change if row is not None else None
    result = (
        record.result
        if record.result is not None and record.result.candidate_id == candidate
        else None
    )
    return Review(
        round=record.round,
        strategy=change.strategy if change else (result.strategy if result else ""),
        approach=change.approach if change else (result.approach if result else ""),
        rationale=change.rationale if change else "",
        passes=len(record.passes),
        corrections=tuple(p.corrections for p in record.passes if p.corrections),
        measure_status=evidence.status if evidence else (result.measure_status if result else ""),
        decision=result.disposition if result else "",
        justification=result.justification if result else "",
        gain=_finite(evidence.gain if evidence else result.gain if result else None),
        noise_floor=_finite(
            evidence.noise_floor if evidence else result.noise_floor if result else None
        ),
        effect_size=_finite(
            evidence.effect_size if evidence else result.effect_size if result else None
        ),
        supports_adoption=evidence.supports_adoption if evidence else None,
        incumbent_id=evidence.incumbent_id if evidence else (result.incumbent_id if result else ""),
        incumbent_metric=evidence.incumbent_metric
        if evidence
        else (result.incumbent_metric if result else None),
        evidence=evidence.summary if evidence else (result.evidence if result else ""),
        seeds=len(evidence.seeds) if evidence else (len(result.metric_repeats) if result else 0),
        gate_decision=evidence.gate_decision
        if evidence
        else (result.gate_decision if result else None),
        max_seeds=evidence.max_seeds if evidence else (result.max_seeds if result else None),
    )


def _with_verdict(review: Review, verdict: str, reason: str) -> Review:
    from dataclasses import replace

    return replace(review, verdict=verdict, reason=reason)


def _diff(records: ResearchRecords, recorded: RecordedSource, record: RoundRecord | None) -> str:
    """The measure step's recorded diff for the change, else one made from the verified
    recorded bytes of the parent and the candidate (none when either does not verify)."""
    manifest = recorded.manifest
    assert manifest is not None
    if record is not None:
        for row in reversed(record.passes):
            evidence = row.evidence
            if (
                evidence is not None
                and evidence.candidate_id == manifest.candidate_id
                and evidence.diff
            ):
                return evidence.diff
    parent = read_candidate(records, manifest.parent_id)
    if parent.manifest is None or not (parent.ok and recorded.ok):
        return ""
    changed = sorted(
        path
        for path in parent.files.keys() | recorded.files.keys()
        if parent.files.get(path) != recorded.files.get(path)
    )
    return diff_contents(parent.files, recorded.files, changed)


def _files(recorded: RecordedSource) -> tuple[SourceFile, ...]:
    """The verified files, cut to the view's budget (none when they did not verify)."""
    found = []
    budget = MAX_SOURCE_CHARS
    for path, data in sorted(recorded.files.items()):
        size = len(data)
        if budget <= 0:
            found.append(SourceFile(path, "", size, shown=False))
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            found.append(SourceFile(path, "", size, binary=True))
            continue
        limit = min(MAX_FILE_CHARS, budget)
        found.append(SourceFile(path, text[:limit], size, truncated=len(text) > limit))
        budget -= min(len(text), limit)
    return tuple(found)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
