"""Where exploration looks: a box around the incumbent that grows on success and shrinks
on failure (a trust region, with TuRBO's constants).

With a study's few dozen candidates, the expected improvement over the whole space is
highest in corners no one measured: the Gaussian process is unsure there and sure near the
best. Studies of rosenbrock spent a third of their rounds on corners a hundred times worse
than their incumbent. The box keeps exploration where the evidence is: its side starts at
0.8 of the unit cube, doubles (up to 1.6, the whole space from anywhere) after three
adoptions in a row, halves after four rejections in a row (or one per numeric parameter,
whichever is more) and starts again at 0.8 once it has shrunk below 1/128. Each side is
scaled by the process's length scale along it, so the box is long where the metric changes
slowly. Categorical parameters are drawn over all their choices, and a draw whose choices
differ from the incumbent's is drawn over the whole space. The side follows from the round
records alone, so a resumed study draws the same box.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zeroshot_kernel.auto_research.agents.space import from_unit, to_unit
from zeroshot_kernel.auto_research.agents.surrogate import Surrogate
from zeroshot_kernel.auto_research.protocol import REMEASURE
from zeroshot_kernel.auto_research.records import ResearchState
from zeroshot_kernel.auto_research.task import Params, TaskSpec

START = 0.8
LARGEST = 1.6
SMALLEST = 0.5**7
SUCCESSES = 3
"""Adoptions in a row that double the side (re-measurements of the incumbent do not count)."""
FAILURES = 4
"""Rejections in a row that halve it (at least one per numeric parameter)."""


def side(spec: TaskSpec, state: ResearchState) -> float:
    """The box's side (unit cube) after the study's decided rounds."""
    length = START
    successes = failures = 0
    patience = max(FAILURES, sum(p.choices is None for p in spec.search_space))
    for result in state.results():
        if result.approach == REMEASURE:
            continue
        if result.disposition == "adopt":
            successes, failures = successes + 1, 0
        else:
            successes, failures = 0, failures + 1
        if successes == SUCCESSES:
            length, successes = min(LARGEST, 2 * length), 0
        elif failures == patience:
            length, failures = length / 2, 0
            if length < SMALLEST:
                length = START
    return length


@dataclass(frozen=True)
class Box:
    centre: Params
    side: float
    """The geometric mean of its sides (unit cube), before clipping to the space."""
    half_widths: dict[str, float]
    """Half of each numeric parameter's side, in the unit cube."""

    def describe(self) -> str:
        return f"a box of side {self.side:.3g}"

    def draw(self, spec: TaskSpec, rng: np.random.Generator, count: int) -> list[Params]:
        """``count`` points, categorical parameters uniform over their choices; the numeric
        ones uniform in the box (clipped to the space) where every choice is the centre's,
        over the whole space where one differs. A neighbourhood in the numbers is one only
        under the same choices: an SVC's best gamma moves by a decade when its features
        are scaled, and a box around the incumbent's gamma kept exploration from it."""
        points = []
        for _ in range(count):
            point: Params = {
                p.name: p.choices[int(rng.integers(len(p.choices)))]
                for p in spec.search_space
                if p.choices is not None
            }
            alike = all(point[name] == self.centre[name] for name in point)
            for p in spec.search_space:
                if p.choices is None:
                    middle = to_unit(p, self.centre[p.name])
                    half = self.half_widths[p.name] if alike else 1.0
                    low, high = max(0.0, middle - half), min(1.0, middle + half)
                    point[p.name] = from_unit(p, float(rng.uniform(low, high)))
            points.append(point)
        return points


def box(spec: TaskSpec, state: ResearchState, centre: Params, surrogate: Surrogate) -> Box:
    """The box around ``centre``: its sides in proportion to the length scales, their
    geometric mean the side the study's rounds imply."""
    length = side(spec, state)
    numeric = [p for p in spec.search_space if p.choices is None]
    scales = surrogate.length_scales(numeric)
    weights = scales / np.exp(np.log(scales).mean()) if len(scales) else scales
    return Box(
        centre,
        length,
        {p.name: float(length * w / 2) for p, w in zip(numeric, weights, strict=True)},
    )
