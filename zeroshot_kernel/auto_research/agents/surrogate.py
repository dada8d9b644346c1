"""What the study has learnt about its metric: a Gaussian process over every candidate.

Every measured candidate counts, whichever scout proposed it. Each one's mean metric, in
the task's direction, is replaced by its normal score (a rank-based Gaussian copula), so a
loss that falls by orders of magnitude and one that moves in its third decimal are
modelled alike; a candidate that crashed, hung past its budget or printed no metric takes
the worst score, so the model learns to expect little where runs failed. Numeric
parameters live in the unit cube (log-scale ones through the logarithm), categorical ones
as one-hot columns. The kernel is a Matérn 5/2 with one length scale per column plus a
noise term, chosen by the marginal likelihood under a weak prior (a coordinate search on
a log grid; a few milliseconds for a study's 30 candidates).

Why not TPE's ratio ``l/g``: with the few candidates of a study, ``l/g`` is highest in
corners no one measured (the good density's broad prior over a bad density spread thin),
so it kept proposing far from the best instead of refining it. The expected improvement
of a Gaussian process weighs the predicted gain against its uncertainty at each point.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from zeroshot_kernel.auto_research.agents.space import from_unit, to_unit
from zeroshot_kernel.auto_research.records import CandidateManifest
from zeroshot_kernel.auto_research.task import Params, SearchParameter, TaskSpec

LENGTH_PRIOR = (math.log(0.3), 1.0)
"""Mean and standard deviation of a numeric column's log length scale (unit cube)."""
CHOICE_LENGTH = math.log(2.0)
"""The prior mean of a one-hot column's log length scale: choices are taken to be alike
until the study shows otherwise, so switching one near the best looks promising (a
choice never measured has no data of its own to pull its length scale)."""
NOISE_PRIOR = (math.log(0.01), 2.0)
"""Mean and standard deviation of log noise-to-signal variance ratio."""
LENGTH_GRID = np.linspace(math.log(0.02), math.log(5.0), 16)
NOISE_GRID = np.linspace(math.log(1e-6), math.log(1.0), 13)
SWEEPS = 3
MARGIN = 0.25
"""The improvement asked for beyond the incumbent, in signal standard deviations: without
it the expected improvement kept refining a plateau within the noise (a study of
svc-digits spent 20 rounds on C = 1000) and never tried a categorical choice again."""
REFINE_FROM = 4
"""How many of the best options :meth:`Surrogate.refine` steps around."""
REFINE_STEPS = (0.01, 0.04)
REFINE_DRAWS = 12
JITTER = 1e-9
_NORMAL = NormalDist()
_CDF = np.vectorize(_NORMAL.cdf, otypes=[float])
_SQRT5 = math.sqrt(5.0)


def _matern(a: np.ndarray, b: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The Matérn 5/2 correlation of every row of ``a`` with every row of ``b``."""
    d = (a[:, None, :] - b[None, :, :]) / lengths
    r = _SQRT5 * np.sqrt((d * d).sum(axis=2))
    kernel: np.ndarray = (1.0 + r + r * r / 3.0) * np.exp(-r)
    return kernel


@dataclass(frozen=True)
class _Fit:
    lengths: np.ndarray
    ratio: float
    """Noise variance over signal variance."""
    scale: float
    """Signal variance (profiled out of the likelihood)."""
    chol: np.ndarray
    alpha: np.ndarray
    score: float
    """Log marginal likelihood plus log prior."""


def _fit(
    x: np.ndarray, y: np.ndarray, log_lengths: np.ndarray, log_ratio: float, prior: np.ndarray
) -> _Fit:
    lengths = np.exp(log_lengths)
    ratio = math.exp(log_ratio)
    n = len(y)
    k = _matern(x, x, lengths) + (ratio + JITTER) * np.eye(n)
    chol = np.linalg.cholesky(k)
    alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, y))
    scale = max(float(y @ alpha) / n, 1e-12)
    likelihood = -0.5 * n * math.log(scale) - float(np.log(np.diag(chol)).sum())
    penalty = 0.5 * float((((log_lengths - prior) / LENGTH_PRIOR[1]) ** 2).sum())
    penalty += 0.5 * ((log_ratio - NOISE_PRIOR[0]) / NOISE_PRIOR[1]) ** 2
    return _Fit(lengths, ratio, scale, chol, alpha, likelihood - penalty)


def _select(x: np.ndarray, y: np.ndarray, prior: np.ndarray) -> _Fit:
    """The hyper-parameters with the best penalised likelihood, one coordinate at a time
    (``prior``: each column's prior mean log length scale)."""
    log_lengths = prior.copy()
    log_ratio = NOISE_PRIOR[0]
    best = _fit(x, y, log_lengths, log_ratio, prior)
    for _ in range(SWEEPS):
        for column in range(x.shape[1]):
            for value in LENGTH_GRID:
                trial = log_lengths.copy()
                trial[column] = value
                fit = _fit(x, y, trial, log_ratio, prior)
                if fit.score > best.score:
                    best, log_lengths = fit, trial
        for value in NOISE_GRID:
            fit = _fit(x, y, log_lengths, float(value), prior)
            if fit.score > best.score:
                best, log_ratio = fit, float(value)
    return best


@dataclass(frozen=True)
class Surrogate:
    """A Gaussian process fitted to a study's candidates, and their expected improvement."""

    space: tuple[SearchParameter, ...]
    inputs: np.ndarray
    fit: _Fit | None
    """``None`` before anything was measured: every point is as promising as another."""
    incumbent: float
    """The lowest posterior mean at a measured candidate (in normal scores)."""
    measured: int
    failed: int

    @classmethod
    def fit_to(cls, spec: TaskSpec, candidates: Iterable[CandidateManifest]) -> Surrogate:
        space = tuple(spec.search_space)
        sign = 1.0 if spec.direction == "minimize" else -1.0
        points: list[Params] = []
        losses: list[float] = []
        for m in sorted(candidates, key=lambda m: m.candidate_id):
            try:
                params = spec.check_params(m.params)
            except ValueError:
                continue  # from before the search space changed
            if m.status == "ok" and m.metric is not None:
                points.append(params)
                losses.append(sign * m.metric)
            elif m.measurements:
                points.append(params)
                losses.append(math.inf)
        inputs = encode(space, points)
        measured = sum(math.isfinite(v) for v in losses)
        if not points:
            return cls(space, inputs, None, 0.0, 0, 0)
        y = normal_scores(losses)
        prior = np.array(
            [
                value
                for p in space
                for value in (
                    [CHOICE_LENGTH] * len(p.choices) if p.choices is not None else [LENGTH_PRIOR[0]]
                )
            ]
        )
        fit = _select(inputs, y, prior)
        mean = _matern(inputs, inputs, fit.lengths) @ fit.alpha
        return cls(space, inputs, fit, float(mean.min()), measured, len(points) - measured)

    def predict(self, options: Sequence[Params]) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation (normal scores, lower is better)."""
        x = encode(self.space, options)
        if self.fit is None:
            return np.zeros(len(options)), np.ones(len(options))
        cross = _matern(x, self.inputs, self.fit.lengths)
        mean = cross @ self.fit.alpha
        v = np.linalg.solve(self.fit.chol, cross.T)
        variance = self.fit.scale * np.maximum(1.0 - (v * v).sum(axis=0), 1e-12)
        return mean, np.sqrt(variance)

    def scores(self, options: Sequence[Params]) -> list[float]:
        """log expected improvement over the incumbent of each option: higher is better."""
        if not options:
            return []
        mean, sd = self.predict(options)
        target = self.incumbent - MARGIN * math.sqrt(self.fit.scale if self.fit else 1.0)
        u = (target - mean) / sd
        return [float(s) for s in np.log(sd) + _log_h(u)]

    def best(self, options: Sequence[Params]) -> tuple[Params, float]:
        """The option with the highest expected improvement (the first among equals)."""
        scores = self.scores(options)
        index = max(range(len(options)), key=lambda i: (scores[i], -i))
        return options[index], scores[index]

    def refine(self, options: Sequence[Params], rng: np.random.Generator) -> tuple[Params, float]:
        """The best of ``options`` and of small steps around the most promising of them:
        the expected improvement's peaks are narrow, so a coarse sample alone misses them."""
        scores = self.scores(options)
        top = sorted(range(len(options)), key=lambda i: (-scores[i], i))[:REFINE_FROM]
        steps = [
            neighbours(self.space, options[i], rng, step, switch=0.1)
            for i in top
            for step in REFINE_STEPS
            for _ in range(REFINE_DRAWS)
        ]
        return self.best([*options, *steps])

    def length_scales(self, numeric: Sequence[SearchParameter]) -> np.ndarray:
        """The fitted length scale of each of ``numeric`` (unit cube); all alike before a fit."""
        if self.fit is None:
            return np.ones(len(numeric))
        columns: dict[str, float] = {}
        column = 0
        for p in self.space:
            if p.choices is not None:
                column += len(p.choices)
            else:
                columns[p.name] = float(self.fit.lengths[column])
                column += 1
        return np.array([columns[p.name] for p in numeric])

    def describe(self) -> str:
        return (
            f"a Gaussian process fitted to {self.measured} measured candidates "
            f"({self.failed} failed)"
        )


def _log_h(u: np.ndarray) -> np.ndarray:
    """log(u Phi(u) + phi(u)), the expected improvement at unit spread, stable far below."""
    density = np.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi)
    direct = u * _CDF(u) + density
    tail = -0.5 * u * u - 0.5 * math.log(2.0 * math.pi) - 2.0 * np.log(np.maximum(-u, 1.0))
    result: np.ndarray = np.where(u < -6.0, tail, np.log(np.maximum(direct, 1e-300)))
    return result


def normal_scores(losses: Sequence[float]) -> np.ndarray:
    """Each loss's normal score by rank (ties share their mean rank); failures (inf) rank
    last. Centred, so the process's prior mean is the study's median."""
    values = np.array(losses, dtype=float)
    n = len(values)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(n)
    ranks[order] = np.arange(n, dtype=float)
    for value in np.unique(values):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    quantiles = (ranks + 0.5) / n
    scores = np.array([_NORMAL.inv_cdf(float(q)) for q in quantiles])
    centred: np.ndarray = scores - scores.mean()
    return centred


def encode(space: Sequence[SearchParameter], points: Sequence[Params]) -> np.ndarray:
    """Points as rows: numeric parameters in the unit cube, categorical ones one-hot."""
    rows = []
    for point in points:
        row: list[float] = []
        for p in space:
            if p.type == "categorical":
                assert p.choices is not None
                chosen = [p.check(c) for c in p.choices].index(p.check(point[p.name]))
                row += [1.0 if i == chosen else 0.0 for i in range(len(p.choices))]
            else:
                row.append(to_unit(p, point[p.name]))
        rows.append(row)
    width = sum(len(p.choices or ()) if p.type == "categorical" else 1 for p in space)
    return np.array(rows, dtype=float).reshape(len(points), width)


def uniform(space: Sequence[SearchParameter], rng: np.random.Generator, count: int) -> list[Params]:
    """``count`` points drawn uniformly (in the unit cube; categorical choices evenly)."""
    return [
        {
            p.name: (
                p.choices[int(rng.integers(len(p.choices)))]
                if p.choices is not None
                else from_unit(p, float(rng.random()))
            )
            for p in space
        }
        for _ in range(count)
    ]


def neighbours(
    space: Sequence[SearchParameter],
    base: Params,
    rng: np.random.Generator,
    step: float,
    switch: float = 0.2,
) -> Params:
    """A Gaussian step of ``step`` (unit cube) from ``base``; each categorical parameter
    switches to another choice with probability ``switch``."""
    point: Params = {}
    for p in space:
        if p.choices is not None:
            others = [c for c in p.choices if c != base[p.name]]
            moved = bool(others) and rng.random() < switch
            point[p.name] = others[int(rng.integers(len(others)))] if moved else base[p.name]
        else:
            point[p.name] = from_unit(p, reflect(to_unit(p, base[p.name]) + step * rng.normal()))
    return point


def reflect(unit: float) -> float:
    """``unit`` folded back into [0, 1] at the bounds: a step past a bound lands inside,
    not on it, so steps around a point at the bound do not pile up there."""
    unit = abs(unit) % 2.0
    return 2.0 - unit if unit > 1.0 else unit
