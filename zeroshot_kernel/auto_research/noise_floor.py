"""The noise floor: when is a measured gain real?

The trusted measure step compares a candidate with the incumbent on **paired seeds**: both
are measured with the same experiment seeds, so the task's seeded noise (noise added to
the metric, a data split) cancels in each seed's difference. The gain is the mean paired
difference in the task's direction; the noise is the standard deviation of the
differences, the larger of this comparison's and the one pooled over the study's earlier
comparisons (the conservative one wins); a gain is real when it beats ``Z * sigma /
sqrt(n)``, about two standard errors of the mean difference. Differences below one part in
10^9 of the metric are rounding, never a gain.

:func:`compare` is the older, unpaired view across candidates measured on any seeds
(means and a pooled standard deviation of repeats), kept for the scouts' heuristics and
the summary.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from zeroshot_kernel.auto_research.records import CandidateManifest
from zeroshot_kernel.auto_research.task import TaskSpec

Z = 2.0
ROUNDING = 1e-9


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
    spec: TaskSpec,
    candidates: Mapping[str, CandidateManifest],
    candidate_id: str,
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
        candidate_id=candidate_id,
        incumbent_id=incumbent_id,
        candidate_mean=c_mean,
        incumbent_mean=i_mean,
        n_candidate=len(c_values),
        n_incumbent=len(i_values),
        sigma=sigma,
        gain=gain,
        noise_floor=floor,
    )


def ranked(spec: TaskSpec, candidates: Mapping[str, CandidateManifest]) -> list[CandidateManifest]:
    """Measured candidates, best mean first (ties by id)."""
    sign = 1.0 if spec.direction == "minimize" else -1.0
    measured = [m for m in candidates.values() if m.metric is not None]
    return sorted(measured, key=lambda m: (sign * (m.metric or 0.0), m.candidate_id))


def fmt(value: float | None) -> str:
    """A metric value for evidence text (``n/a`` when absent)."""
    return "n/a" if value is None else f"{value:.6g}"


@dataclass(frozen=True)
class Paired:
    """A candidate against the incumbent on the seeds both were measured with."""

    seeds: tuple[int, ...]
    candidate: tuple[float, ...]
    incumbent: tuple[float, ...]
    gain: float
    sigma: float | None
    """Standard deviation of the paired differences; ``None`` with one pair and no
    earlier comparison to pool."""
    effect_size: float | None
    """Mean difference over its standard deviation; ``None`` when that is rounding."""

    @property
    def n(self) -> int:
        return len(self.seeds)

    @property
    def noise_floor(self) -> float:
        return 0.0 if self.sigma is None or not self.n else Z * self.sigma / math.sqrt(self.n)

    @property
    def _rounding(self) -> float:
        scale = abs(sum(self.incumbent) / self.n) if self.n else 0.0
        return ROUNDING * max(1.0, scale)

    @property
    def beats_noise(self) -> bool:
        return (
            self.n > 0 and self.sigma is not None and self.gain > self.noise_floor + self._rounding
        )

    @property
    def worse_beyond_noise(self) -> bool:
        return (
            self.n > 0 and self.sigma is not None and -self.gain > self.noise_floor + self._rounding
        )

    def describe(self, metric: str, candidate_id: str, incumbent_id: str) -> str:
        c_mean = sum(self.candidate) / self.n if self.n else None
        i_mean = sum(self.incumbent) / self.n if self.n else None
        effect = "" if self.effect_size is None else f", effect size {fmt(self.effect_size)}"
        return (
            f"{candidate_id} {metric} {fmt(c_mean)} vs incumbent {incumbent_id} "
            f"{fmt(i_mean)} on {self.n} paired seeds: gain {fmt(self.gain)}, noise floor "
            f"{fmt(self.noise_floor)} (sigma of the differences {fmt(self.sigma)}, "
            f"Z={Z:g}){effect}"
        )


def differences(
    spec: TaskSpec, candidate: Sequence[float], incumbent: Sequence[float]
) -> list[float]:
    """Each seed's improvement of the candidate over the incumbent (positive = better)."""
    return [spec.gain(i, c) for c, i in zip(candidate, incumbent, strict=True)]


def paired(
    spec: TaskSpec,
    seeds: Sequence[int],
    candidate: Mapping[int, float],
    incumbent: Mapping[int, float],
    pooled: float | None,
) -> Paired:
    """Compare on the ``seeds`` both have a value for; ``pooled`` is the standard deviation
    of earlier comparisons' differences (see :func:`pooled_sigma`)."""
    shared = [s for s in seeds if s in candidate and s in incumbent]
    c_values = [candidate[s] for s in shared]
    i_values = [incumbent[s] for s in shared]
    d = differences(spec, c_values, i_values)
    local = pooled_sigma([d]) if len(d) >= 2 else None
    sigma = max((s for s in (local, pooled) if s is not None), default=None)
    gain = sum(d) / len(d) if d else 0.0
    scale = abs(sum(i_values) / len(i_values)) if i_values else 0.0
    noisy = local is not None and local > ROUNDING * max(1.0, scale)  # else it cancelled
    effect = gain / local if noisy and local else None
    return Paired(
        seeds=tuple(shared),
        candidate=tuple(c_values),
        incumbent=tuple(i_values),
        gain=gain,
        sigma=sigma,
        effect_size=effect,
    )
