"""The noise floor: when is a measured gain real?

The trusted measure step compares a candidate with the incumbent on **paired seeds**: both
are measured with the same experiment seeds, so the noise the two share on a seed (a data
split, noise seeded by the seed alone) cancels in that seed's difference. The gain is the
mean paired difference in the task's direction (positive = better).

**The noise of a comparison is estimated at its own scale**: from the standard deviation of
*this pair's* paired differences. A training loss that falls by orders of magnitude has
noise that falls with it, so a sigma pooled over a study's earlier comparisons (made when
the loss was 100 times larger) would hide every later gain; the pair's own differences
never do. Earlier comparisons are only borrowed from where the pair has no spread of its
own yet (after one seed), and only those at a similar scale (mean incumbents within a
factor :data:`SIMILAR_SCALE`), rescaled in proportion to the metric when it is positive
(noise that grows with the metric) — see :func:`borrowed_sigma`.

**Racing** (:func:`race`, F-race in spirit): the candidate is measured on one seed first,
then on ``repeats`` seeds, then on one more at a time (two for a discriminating
measurement) until the comparison is decided or the :class:`Gate`'s budget of seeds is
spent. A look per seed stops a race as soon as its evidence allows, and keeps the runs of
candidates measured at once in step: each look adds one run per candidate, so they fill
the workers, where looks of several seeds leave workers idle while the slowest candidate
of a round catches up. The decisions:

- ``better``: a paired t-test says the gain beats the noise floor ``t * sd / sqrt(n)``; its
  one-sided level :data:`ALPHA` is split evenly over the race's looks (Bonferroni), so a
  candidate no better than the incumbent is adopted at most about 5 % of the time however
  many seeds the race adds;
- ``worse``: the candidate is worse beyond the floor (after one seed: beyond ``Z`` borrowed
  sigmas);
- ``not_better``: on ``repeats`` seeds or more it is no better on average, so more seeds
  are unlikely to make it a real gain;
- ``budget_spent``: the budget's seeds were measured and the gain is still within the floor;
- ``failed``: a candidate run failed (crash, hang, no metric, pruned).

Differences below one part in 10^9 of the metric are rounding, never a gain; a pair whose
differences are all equal (the seeded noise cancels exactly) is decided on the first look,
unless comparisons at its scale were noisy (then its equal differences are chance, as a
discrete metric on a few seeds gives, and their borrowed sigma sets the floor).

:func:`compare` is the older, unpaired view across candidates measured on any seeds
(means and a pooled standard deviation of repeats at the pair's scale), kept for the scouts'
heuristics and the summary.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from zeroshot_kernel.auto_research.protocol import GateDecision
from zeroshot_kernel.auto_research.records import CandidateManifest
from zeroshot_kernel.auto_research.task import TaskSpec

Z = 2.0
"""Standard errors a difference must exceed in the unpaired view (:func:`compare`) and in
the one-seed early stop on a borrowed sigma."""
ALPHA = 0.05
"""The one-sided false-adoption level of one comparison, split over its race's looks."""
ROUNDING = 1e-9
SIMILAR_SCALE = 2.0
"""Earlier comparisons are borrowed from only when their incumbent's mean is within this
factor of this comparison's."""
MAX_SEEDS_PER_REPEAT = 3
"""The default racing budget: this many times the task's repeats (``maxSeeds`` sets it)."""


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


def similar_scale(a: float, b: float) -> bool:
    """Whether two metric levels are within :data:`SIMILAR_SCALE` of each other."""
    a, b = abs(a), abs(b)
    if a == 0.0 or b == 0.0:
        return a == b
    return max(a, b) / min(a, b) <= SIMILAR_SCALE


@dataclass(frozen=True)
class Spread:
    """The noise seen in one earlier group of values: its standard deviation, the level it
    was seen at, its degrees of freedom, and whether all its values were positive."""

    sigma: float
    scale: float
    dof: int
    positive: bool


@dataclass(frozen=True)
class Borrowed:
    """A sigma borrowed from earlier comparisons at a similar scale, at this one's scale."""

    sigma: float
    comparisons: int
    dof: int
    relative: bool
    """Rescaled in proportion to the metric (positive metrics), else taken as it was."""

    def describe(self) -> str:
        how = "rescaled to this level" if self.relative else "as measured"
        return (
            f"sigma {fmt(self.sigma)} borrowed from {self.comparisons} earlier "
            f"comparison{'s' if self.comparisons != 1 else ''} at a similar scale ({how})"
        )


def borrowed_sigma(spreads: Iterable[Spread], scale: float, positive: bool) -> Borrowed | None:
    """Pool the ``spreads`` seen at a level similar to ``scale`` into a sigma at ``scale``:
    relative to the level when this comparison and the earlier one are both positive (noise
    proportional to the metric), absolute otherwise; ``None`` when none is similar."""
    squares, dof, count, relative = 0.0, 0, 0, True
    for spread in spreads:
        if spread.dof < 1 or not similar_scale(spread.scale, scale):
            continue
        if positive and spread.positive and spread.scale > 0:
            sigma = spread.sigma * abs(scale) / spread.scale
        else:
            sigma, relative = spread.sigma, False
        squares += spread.dof * sigma**2
        dof += spread.dof
        count += 1
    if not dof:
        return None
    return Borrowed(sigma=math.sqrt(squares / dof), comparisons=count, dof=dof, relative=relative)


def noise_sigma(candidates: Mapping[str, CandidateManifest], pair: Sequence[str]) -> float:
    """The conservative noise estimate for comparing the candidates in ``pair``: the larger
    of the pair's pooled repeats and those of the candidates at a similar scale (rescaled
    to the pair's level); with no pair, the repeats of every candidate."""
    members = [candidates[c] for c in dict.fromkeys(pair) if c in candidates]
    local = pooled_sigma(m.values for m in members)
    values = [v for m in members for v in m.values]
    if not values:
        overall = pooled_sigma(m.values for m in candidates.values())
        return max((s for s in (overall, local) if s is not None), default=0.0)
    scale = sum(values) / len(values)
    borrowed = borrowed_sigma(
        (_spread(m.values) for m in candidates.values() if len(m.values) >= 2),
        scale,
        all(v > 0 for v in values),
    )
    overall = borrowed.sigma if borrowed else None
    return max((s for s in (overall, local) if s is not None), default=0.0)


def _spread(values: Sequence[float]) -> Spread:
    sigma = pooled_sigma([values]) or 0.0
    return Spread(
        sigma=sigma,
        scale=sum(values) / len(values),
        dof=len(values) - 1,
        positive=all(v > 0 for v in values),
    )


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


def paired_seeds(n: int) -> str:
    """``1 paired seed``, ``6 paired seeds``."""
    return f"{n} paired seed{'s' if n != 1 else ''}"


def percent(fraction: float) -> str:
    """A relative gain for evidence text: ``+30.1 %``, ``-1160 %``."""
    value = 100.0 * fraction
    return f"{value:+.0f} %" if abs(value) >= 100 else f"{value:+.3g} %"


# --- Student's t, for the paired test (no SciPy in the core) ---------------------------


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, dof: int) -> float:
    """P(T <= t) for Student's t with ``dof`` degrees of freedom."""
    tail = 0.5 * _incomplete_beta(dof / 2.0, 0.5, dof / (dof + t * t))
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=1024)
def t_quantile(p: float, dof: int) -> float:
    """The ``p`` quantile of Student's t with ``dof`` degrees of freedom (``p`` in (0.5, 1))."""
    if not 0.5 < p < 1.0 or dof < 1:
        raise ValueError(f"t_quantile needs 0.5 < p < 1 and dof >= 1, got {p}, {dof}")
    low, high = 0.0, 1.0
    while t_cdf(high, dof) < p:
        low, high = high, high * 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_cdf(middle, dof) < p:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * max(1.0, high):
            break
    return (low + high) / 2.0


# --- The gate: paired seeds, raced --------------------------------------------------------


@dataclass(frozen=True)
class Gate:
    """The rule that decides a comparison: the seeds of its first decisive look
    (``repeats``), the seeds each later look adds (``step``), the most seeds racing may give
    it (``max_seeds``), and its false-adoption level :data:`ALPHA`, split evenly over the
    looks."""

    repeats: int
    max_seeds: int
    step: int = 1
    alpha: float = ALPHA
    first_seed: bool = True
    """Whether the race looks after one seed first (an early stop for a clearly worse
    candidate, on a borrowed sigma)."""

    def __post_init__(self) -> None:
        if (
            self.repeats < 1
            or self.max_seeds < self.repeats
            or self.step < 1
            or not 0 < self.alpha < 1
        ):
            raise ValueError(
                f"a gate needs 1 <= repeats <= max_seeds, step >= 1 and 0 < alpha < 1, "
                f"got {self.repeats}, {self.max_seeds}, {self.step}, {self.alpha}"
            )

    @classmethod
    def of(cls, spec: TaskSpec, discriminating: bool = False) -> Gate:
        """The task's gate; a discriminating measurement doubles the seeds, the budget and
        the seeds a look adds (so it has as many looks)."""
        factor = 2 if discriminating else 1
        budget = spec.max_seeds or MAX_SEEDS_PER_REPEAT * spec.repeats
        budget = max(budget, spec.repeats)
        return cls(
            repeats=factor * spec.repeats,
            max_seeds=factor * budget,
            step=factor,
            first_seed=not discriminating,
        )

    @property
    def looks(self) -> tuple[int, ...]:
        """The seed counts at which an adoption may be decided."""
        looks = list(range(self.repeats, self.max_seeds + 1, self.step))
        if looks[-1] != self.max_seeds:
            looks.append(self.max_seeds)
        return tuple(looks)

    @property
    def schedule(self) -> tuple[int, ...]:
        """The seed counts the race measures up to, look by look."""
        first = (1,) if self.first_seed and self.repeats > 1 else ()
        return (*first, *self.looks)

    @property
    def alpha_per_look(self) -> float:
        return self.alpha / len(self.looks)

    def critical(self, n: int) -> float | None:
        """The t value a gain on ``n`` paired seeds must beat (``None`` below two seeds)."""
        if n < 2:
            return None
        return t_quantile(1.0 - self.alpha_per_look, n - 1)


@dataclass(frozen=True)
class Paired:
    """A candidate against the incumbent on the seeds both were measured with, decided by
    the gate (see the module's docstring)."""

    seeds: tuple[int, ...]
    candidate: tuple[float, ...]
    incumbent: tuple[float, ...]
    gain: float
    sigma: float | None
    """The standard deviation the floor uses: the pair's own paired differences from two
    seeds on; before that, one borrowed from earlier comparisons (``borrowed``), if any."""
    effect_size: float | None
    """Mean difference over its standard deviation; ``None`` when that is rounding."""
    noise_floor: float = 0.0
    critical: float | None = None
    """The multiplier of ``sigma / sqrt(n)`` in the floor: the t value of this look, or
    :data:`Z` on a borrowed sigma."""
    decision: GateDecision = "undecided"
    max_seeds: int = 0
    """The race's budget of seeds (``0``: not raced)."""
    borrowed: Borrowed | None = None
    """The sigma borrowed from earlier comparisons, where the floor uses it: after one seed,
    or where this pair's differences are all equal but those comparisons' were not."""
    exact: bool = False
    """The paired differences are all equal: the seeded noise cancelled exactly."""
    failed: str = ""
    """The status of the failed run that stopped the race (``decision`` is ``failed``)."""
    looks: int = 0
    """The race's looks its level is split over (``0``: not raced)."""

    @property
    def n(self) -> int:
        return len(self.seeds)

    @property
    def beats_noise(self) -> bool:
        return self.decision == "better"

    @property
    def worse_beyond_noise(self) -> bool:
        return self.decision == "worse"

    @property
    def relative_gain(self) -> float | None:
        """The gain as a fraction of the incumbent's mean (``None`` at zero)."""
        scale = abs(sum(self.incumbent) / self.n) if self.n else 0.0
        return self.gain / scale if scale else None

    def floor_text(self) -> str:
        """How the noise floor was computed, in words."""
        if not self.n:
            return "no paired seeds"
        if self.exact:
            return "the seeded noise cancels exactly on these paired seeds"
        if self.sigma is None:
            return "no sigma yet: one seed and no earlier comparison at a similar scale"
        if self.borrowed is not None and self.n == 1:
            return f"Z={Z:g} x {self.borrowed.describe()}"
        if self.borrowed is not None:
            return (
                f"t={self.critical:.3g} x {self.borrowed.describe()} / sqrt({self.n}): the "
                "pair's differences are all equal, by chance where comparisons at this scale "
                "were noisy"
            )
        split = f", split over {self.looks} looks" if self.looks > 1 else ""
        return (
            f"t={self.critical:.3g} (one-sided {ALPHA:g}{split}) x sd of the paired "
            f"differences {fmt(self.sigma)} / sqrt({self.n})"
        )

    def decision_text(self) -> str:
        """The gate's decision, with the seeds it took."""
        return decision_text(self.decision, self.n, self.max_seeds, self.failed)

    def describe_remeasurement(self, metric: str, candidate_id: str) -> str:
        """A candidate measured against itself (the incumbent re-measured)."""
        mean = sum(self.candidate) / self.n if self.n else None
        sd = pooled_sigma([self.candidate])
        return (
            f"{candidate_id} {metric} {fmt(mean)} re-measured on {paired_seeds(self.n)} "
            f"(sd of its values {fmt(sd)}); "
            "nothing to compare"
        )

    def describe(self, metric: str, candidate_id: str, incumbent_id: str) -> str:
        if not self.n:
            return (
                f"{candidate_id} was not compared with incumbent {incumbent_id}: no paired "
                f"measurement; gate: {self.decision_text()}"
            )
        c_mean = sum(self.candidate) / self.n
        i_mean = sum(self.incumbent) / self.n
        effect = "" if self.effect_size is None else f", effect size {fmt(self.effect_size)}"
        relative = "" if self.relative_gain is None else f" ({percent(self.relative_gain)})"
        return (
            f"{candidate_id} {metric} {fmt(c_mean)} vs incumbent {incumbent_id} "
            f"{fmt(i_mean)} on {paired_seeds(self.n)}: "
            f"gain {fmt(self.gain)}{relative}, noise floor {fmt(self.noise_floor)} "
            f"({self.floor_text()}){effect}; gate: {self.decision_text()}"
        )


def decision_text(
    decision: str | None, n: int, max_seeds: int | None = None, failed: str = ""
) -> str:
    """How a race over paired seeds ended, in words (``decision``: a ``GateDecision``)."""
    seeds = f"{n} of at most {max_seeds} seeds" if max_seeds else f"{n} seed{'s' if n != 1 else ''}"
    after = "one run" if n == 1 else seeds
    texts = {
        "better": f"better beyond the noise floor after {seeds}",
        "worse": f"stopped after {after}: worse than the incumbent beyond the noise floor",
        "not_better": f"stopped after {after}: no better than the incumbent on average",
        "budget_spent": f"undecided: the race spent its budget of {n} seeds "
        "with the gain within the noise floor",
        "failed": f"stopped after a {failed or 'failed'} run; no further seeds",
        "undecided": f"undecided after {seeds}",
    }
    return texts.get(decision or "", f"not raced ({n} paired seed{'s' if n != 1 else ''})")


def gate_summary(
    gain: float | None,
    noise_floor: float | None,
    seeds: int,
    decision: str | None,
    max_seeds: int | None = None,
) -> str:
    """A decided comparison's numbers for a view: ``gain 0.3 against the noise floor 0.1
    on 6 paired seeds: better beyond the noise floor after 6 of at most 9 seeds``."""
    if gain is None or noise_floor is None or not seeds:
        return "not compared: no paired measurement"
    numbers = (
        f"gain {fmt(gain)} against the noise floor {fmt(noise_floor)} on {paired_seeds(seeds)}"
    )
    if decision is None:
        return numbers
    return f"{numbers}: {decision_text(decision, seeds, max_seeds)}"


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
    borrowed: Borrowed | None = None,
    gate: Gate | None = None,
) -> Paired:
    """Compare on the ``seeds`` both have a value for and decide by ``gate`` (by default the
    task's); ``borrowed`` (see :func:`borrowed_sigma`) is used only while the pair has one
    seed."""
    gate = gate or Gate.of(spec)
    shared = [s for s in seeds if s in candidate and s in incumbent]
    c_values = [candidate[s] for s in shared]
    i_values = [incumbent[s] for s in shared]
    d = differences(spec, c_values, i_values)
    n = len(d)
    gain = sum(d) / n if n else 0.0
    scale = abs(sum(i_values) / n) if n else 0.0
    rounding = ROUNDING * max(1.0, scale)
    local = pooled_sigma([d]) if n >= 2 else None
    exact = local is not None and local <= rounding
    effect = gain / local if local is not None and not exact and local else None
    base = Paired(
        seeds=tuple(shared),
        candidate=tuple(c_values),
        incumbent=tuple(i_values),
        gain=gain,
        sigma=None,
        effect_size=effect,
        max_seeds=gate.max_seeds,
        looks=len(gate.looks),
        exact=exact,
    )
    if not n:
        return base
    if local is None:  # one seed: only a clearly worse candidate is decided, on a borrowed sigma
        if borrowed is None:
            return base
        floor = Z * borrowed.sigma / math.sqrt(n)
        return dataclasses.replace(
            base,
            sigma=borrowed.sigma,
            noise_floor=floor,
            critical=Z,
            decision="worse" if -gain > floor + rounding else "undecided",
            borrowed=borrowed,
        )
    sigma, critical, lent = local, gate.critical(n), None
    if exact and borrowed is not None and borrowed.sigma > rounding:
        # All differences equal where comparisons at this scale had noise: chance (a
        # discrete metric, a few seeds), not noise that cancels. Judge on their sigma.
        sigma, critical, lent = (
            borrowed.sigma,
            t_quantile(1.0 - gate.alpha_per_look, borrowed.dof),
            borrowed,
        )
        exact = False
    elif exact:
        critical = 0.0
    assert critical is not None
    floor = critical * sigma / math.sqrt(n)
    full = exact or n >= gate.repeats
    decision: GateDecision
    if full and gain > floor + rounding:
        decision = "better"
    elif full and -gain > floor + rounding:
        decision = "worse"
    elif full and gain <= rounding:
        decision = "not_better"
    elif n >= gate.max_seeds:
        decision = "budget_spent"
    else:
        decision = "undecided"
    return dataclasses.replace(
        base,
        sigma=sigma,
        noise_floor=floor,
        critical=critical,
        decision=decision,
        borrowed=lent,
        exact=exact,
    )


Measured = tuple[Mapping[int, float], Mapping[int, float], str]
"""What a race's measuring function returns for the seeds it was given: the candidate's
values and the incumbent's, by seed, and the status of a failed candidate run (``""``
when every one succeeded)."""


def race(
    spec: TaskSpec,
    gate: Gate,
    seeds: Sequence[int],
    measure: Callable[[Sequence[int]], Measured],
    borrowed: Borrowed | None = None,
) -> Paired:
    """Race the candidate against the incumbent: ``measure`` the first seeds of each of
    the gate's looks (``seeds`` holds at least ``gate.max_seeds``), decide after each, and
    stop on a decision, a failed run or the budget. The result says which way it ended."""
    if len(seeds) < gate.max_seeds:
        raise ValueError(f"a race of {gate.max_seeds} seeds was given {len(seeds)}")
    comparison = paired(spec, [], {}, {}, borrowed, gate)
    for n in gate.schedule:
        look = list(seeds[:n])
        candidate, incumbent, failed = measure(look)
        comparison = paired(spec, look, candidate, incumbent, borrowed, gate)
        if failed:
            return dataclasses.replace(comparison, decision="failed", failed=failed)
        if comparison.decision != "undecided":
            return comparison
    return comparison
