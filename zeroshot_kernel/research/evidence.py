"""The noise floor: when is a measured gain real?

Each candidate is measured several times (the task's ``repeats``). The noise estimate is
the pooled standard deviation of repeated measurements, taking the larger of the estimate
over every measured candidate and over just the two being compared (noise can differ
across the search space, so the conservative one wins). A gain is real when it beats
``Z * sigma * sqrt(1/n_candidate + 1/n_incumbent)``: about two standard errors of the
difference of the two means. The researcher and the reviewer both decide with this module,
so they can only disagree about evidence, never about arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from zeroshot_kernel.research.records import CandidateManifest
from zeroshot_kernel.research.task import TaskSpec

Z = 2.0


@dataclass(frozen=True)
class Comparison:
    """A candidate against the incumbent, with the noise floor for this pair."""

    candidate_id: str
    incumbent_id: str
    candidate_mean: float | None
    incumbent_mean: float | None
    n_candidate: int
    n_incumbent: int
    sigma: float
    gain: float
    noise_floor: float

    @property
    def measured(self) -> bool:
        return self.candidate_mean is not None and self.incumbent_mean is not None

    @property
    def beats_noise(self) -> bool:
        return self.measured and self.gain > self.noise_floor

    @property
    def worse_beyond_noise(self) -> bool:
        return self.measured and -self.gain > self.noise_floor

    def describe(self, metric: str) -> str:
        return (
            f"{self.candidate_id} {metric} {fmt(self.candidate_mean)} (n={self.n_candidate}) "
            f"vs incumbent {self.incumbent_id} {fmt(self.incumbent_mean)} "
            f"(n={self.n_incumbent}): gain {fmt(self.gain)}, noise floor "
            f"{fmt(self.noise_floor)} (sigma {fmt(self.sigma)}, Z={Z:g})"
        )


def pooled_sigma(groups: Iterable[Sequence[float]]) -> float | None:
    """Pooled standard deviation over groups of repeats; ``None`` without two of any."""
    squares, freedom = 0.0, 0
    for values in groups:
        if len(values) >= 2:
            mean = sum(values) / len(values)
            squares += sum((v - mean) ** 2 for v in values)
            freedom += len(values) - 1
    return math.sqrt(squares / freedom) if freedom else None


def noise_sigma(candidates: Mapping[str, CandidateManifest], pair: Sequence[str]) -> float:
    """The conservative noise estimate for comparing the candidates in ``pair``."""
    overall = pooled_sigma(m.values for m in candidates.values())
    local = pooled_sigma(candidates[c].values for c in dict.fromkeys(pair) if c in candidates)
    return max((s for s in (overall, local) if s is not None), default=0.0)


def compare(
    spec: TaskSpec, candidates: Mapping[str, CandidateManifest], candidate_id: str,
    incumbent_id: str,
) -> Comparison:
    """``candidate_id`` against ``incumbent_id`` under the current measurements."""
    candidate = candidates.get(candidate_id)
    incumbent = candidates.get(incumbent_id)
    c_values = candidate.values if candidate else []
    i_values = incumbent.values if incumbent else []
    c_mean = sum(c_values) / len(c_values) if c_values else None
    i_mean = sum(i_values) / len(i_values) if i_values else None
    sigma = noise_sigma(candidates, [candidate_id, incumbent_id])
    floor = Z * sigma * math.sqrt(1 / max(len(c_values), 1) + 1 / max(len(i_values), 1))
    gain = spec.gain(i_mean, c_mean) if c_mean is not None and i_mean is not None else 0.0
    return Comparison(
        candidate_id=candidate_id, incumbent_id=incumbent_id, candidate_mean=c_mean,
        incumbent_mean=i_mean, n_candidate=len(c_values), n_incumbent=len(i_values),
        sigma=sigma, gain=gain, noise_floor=floor,
    )


def ranked(spec: TaskSpec, candidates: Mapping[str, CandidateManifest]) -> list[CandidateManifest]:
    """Measured candidates, best mean first (ties by id)."""
    sign = 1.0 if spec.direction == "minimize" else -1.0
    measured = [m for m in candidates.values() if m.metric is not None]
    return sorted(measured, key=lambda m: (sign * (m.metric or 0.0), m.candidate_id))


def fmt(value: float | None) -> str:
    """A metric value for evidence text (``n/a`` when absent)."""
    return "n/a" if value is None else f"{value:.6g}"
