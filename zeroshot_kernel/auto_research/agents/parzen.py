"""What the study has learnt about where to look: TPE's two Parzen densities.

Every measured candidate counts. The best fraction of the successful ones make the
density ``l`` of good points; the others, and every candidate that crashed, hung past its
budget or printed no metric, make ``g``. Under TPE's model the expected improvement of a
point grows with ``l(x) / g(x)``, so the scouts keep the best of several draws by that
ratio and the researcher ranks their proposals by it: a point near good candidates and far
from failures scores high. Numeric parameters live in the unit cube (log-scale ones
through the logarithm) with truncated Gaussian kernels; categorical ones have a kernel
that keeps the observed choice with probability ``KEEP``. Each density also holds one
broad prior component, so nothing is ever ruled out entirely.
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

GAMMA = 0.15
"""The fraction of successful candidates that count as good (at least one, at most 25)."""
MAX_GOOD = 25
BANDWIDTH = 0.2
"""Kernel width in the unit cube for one point, shrinking as n ** (-1 / (d + 4))."""
MIN_BANDWIDTH = 0.01
PRIOR_WIDTH = 1.0
KEEP = 0.7
_NORMAL = NormalDist()
_CDF = np.vectorize(_NORMAL.cdf, otypes=[float])
_QUANTILE = np.vectorize(_NORMAL.inv_cdf, otypes=[float])


@dataclass(frozen=True)
class _Mixture:
    """A weighted mixture of product kernels: one component per point plus the prior."""

    centres: np.ndarray
    """(components, numeric parameters) in the unit cube."""
    widths: np.ndarray
    """(components,) the Gaussian width of each component."""
    chosen: np.ndarray
    """(components, categorical parameters) the observed choice's index; -1: the prior."""
    weights: np.ndarray
    sizes: tuple[int, ...]
    """How many choices each categorical parameter has."""

    @classmethod
    def of(
        cls, numeric: np.ndarray, chosen: np.ndarray, sizes: tuple[int, ...], dims: int
    ) -> _Mixture:
        points = len(numeric)
        width = max(MIN_BANDWIDTH, BANDWIDTH * max(points, 1) ** (-1.0 / (dims + 4)))
        return cls(
            centres=np.vstack([numeric, np.full((1, numeric.shape[1]), 0.5)]),
            widths=np.append(np.full(points, width), PRIOR_WIDTH),
            chosen=np.vstack([chosen, np.full((1, chosen.shape[1]), -1)]).astype(int),
            weights=np.full(points + 1, 1.0 / (points + 1)),
            sizes=sizes,
        )

    def log_density(self, numeric: np.ndarray, chosen: np.ndarray) -> np.ndarray:
        """log of the mixture's density at each row of (numeric, chosen)."""
        mu, s = self.centres[None, :, :], self.widths[None, :, None]
        x = numeric[:, None, :]
        mass = _CDF((1.0 - mu) / s) - _CDF(-mu / s)
        kernels = -0.5 * ((x - mu) / s) ** 2 - np.log(s * math.sqrt(2 * math.pi) * mass)
        total = kernels.sum(axis=2) + np.log(self.weights)[None, :]
        for j, size in enumerate(self.sizes):
            observed = self.chosen[None, :, j]
            same = chosen[:, None, j] == observed
            p = np.where(same, KEEP, (1.0 - KEEP) / max(size - 1, 1)) if size > 1 else 1.0
            total = total + np.log(np.where(observed < 0, 1.0 / size, p))
        top = total.max(axis=1, keepdims=True)
        density: np.ndarray = top[:, 0] + np.log(np.exp(total - top).sum(axis=1))
        return density

    def draw(self, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``count`` points drawn from the mixture (truncated to the unit cube)."""
        which = rng.choice(len(self.weights), size=count, p=self.weights)
        mu, s = self.centres[which], self.widths[which][:, None]
        low, high = _CDF(-mu / s), _CDF((1.0 - mu) / s)
        u = np.clip(low + rng.random(mu.shape) * (high - low), 1e-12, 1.0 - 1e-12)
        numeric = np.clip(mu + s * _QUANTILE(u), 0.0, 1.0) if mu.size else mu
        chosen = np.empty((count, len(self.sizes)), dtype=int)
        for j, size in enumerate(self.sizes):
            observed = self.chosen[which, j]
            uniform = rng.integers(0, size, size=count)
            keep = (observed >= 0) & (rng.random(count) < KEEP)
            other = (observed + 1 + rng.integers(0, max(size - 1, 1), size=count)) % size
            chosen[:, j] = np.where(observed < 0, uniform, np.where(keep, observed, other))
        return numeric, chosen


@dataclass(frozen=True)
class Landscape:
    """The good and bad densities of one study, and how to score and draw points."""

    space: tuple[SearchParameter, ...]
    good: _Mixture
    bad: _Mixture
    measured: int
    """Candidates with a metric on every run."""
    failed: int
    """Candidates with a failed run (crashed, timed out, no metric...)."""

    @classmethod
    def fit(cls, spec: TaskSpec, candidates: Iterable[CandidateManifest]) -> Landscape:
        space = tuple(spec.search_space)
        sign = 1.0 if spec.direction == "minimize" else -1.0
        ok: list[tuple[float, str, Params]] = []
        failed: list[Params] = []
        for m in sorted(candidates, key=lambda m: m.candidate_id):
            try:
                params = spec.check_params(m.params)
            except ValueError:
                continue  # from before the search space changed
            if m.status == "ok" and m.metric is not None:
                ok.append((sign * m.metric, m.candidate_id, params))
            elif m.measurements:
                failed.append(params)
        ok.sort(key=lambda item: (item[0], item[1]))
        cut = min(MAX_GOOD, max(1, math.ceil(GAMMA * len(ok)))) if ok else 0
        good = [p for _, _, p in ok[:cut]]
        bad = [p for _, _, p in ok[cut:]] + failed
        numeric = [p for p in space if p.type != "categorical"]
        sizes = tuple(len(p.choices or ()) for p in space if p.type == "categorical")
        dims = max(1, len(numeric))
        return cls(
            space,
            _Mixture.of(*_encode(space, good), sizes, dims),
            _Mixture.of(*_encode(space, bad), sizes, dims),
            measured=len(ok),
            failed=len(failed),
        )

    def scores(self, options: Sequence[Params]) -> list[float]:
        """log l(x) - log g(x) of each option: higher means more expected improvement."""
        if not options:
            return []
        numeric, chosen = _encode(self.space, options)
        ratio = self.good.log_density(numeric, chosen) - self.bad.log_density(numeric, chosen)
        return [float(r) for r in ratio]

    def best(self, options: Sequence[Params]) -> tuple[Params, float]:
        """The option with the highest ratio (the first among equals) and its ratio."""
        scores = self.scores(options)
        index = max(range(len(options)), key=lambda i: (scores[i], -i))
        return options[index], scores[index]

    def draw(self, rng: np.random.Generator, count: int) -> list[Params]:
        """``count`` points drawn from the good density ``l``."""
        numeric, chosen = self.good.draw(rng, count)
        return _decode(self.space, numeric, chosen)

    def describe(self) -> str:
        return f"Parzen l/g fitted to {self.measured} measured candidates ({self.failed} failed)"


def _encode(
    space: Sequence[SearchParameter], points: Sequence[Params]
) -> tuple[np.ndarray, np.ndarray]:
    numeric = [p for p in space if p.type != "categorical"]
    categorical = [p for p in space if p.type == "categorical"]
    units = np.array(
        [[to_unit(p, point[p.name]) for p in numeric] for point in points], dtype=float
    )
    chosen = np.array(
        [[_index(p, point[p.name]) for p in categorical] for point in points], dtype=int
    )
    return units.reshape(len(points), len(numeric)), chosen.reshape(len(points), len(categorical))


def _index(p: SearchParameter, value: object) -> int:
    assert p.choices is not None
    return [p.check(c) for c in p.choices].index(p.check(value))


def _decode(
    space: Sequence[SearchParameter], numeric: np.ndarray, chosen: np.ndarray
) -> list[Params]:
    points: list[Params] = []
    for row in range(len(numeric)):
        columns = iter(numeric[row])
        picks = iter(chosen[row])
        point: Params = {}
        for p in space:
            if p.type == "categorical":
                assert p.choices is not None
                point[p.name] = p.choices[int(next(picks))]
            else:
                point[p.name] = from_unit(p, float(next(columns)))
        points.append(point)
    return points
