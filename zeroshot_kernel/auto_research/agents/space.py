"""The search space as the embedded scouts see it: a unit cube; and as optuna sees it.

Numeric parameters map to [0, 1] (through the logarithm for log-scale ones), so blending and
perturbing treat ``C = 0.01 .. 1000`` as evenly as ``x = -2 .. 2``. The scouts search
without optuna; its distributions serve the importance view and B5's peers, and optuna is
imported only when they are asked for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from zeroshot_kernel.auto_research.task import ParamValue, SearchParameter

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution


def _bounds(p: SearchParameter) -> tuple[float, float]:
    assert p.low is not None and p.high is not None
    return (math.log(p.low), math.log(p.high)) if p.log else (p.low, p.high)


def to_unit(p: SearchParameter, value: ParamValue) -> float:
    """A numeric parameter's value as a point of [0, 1]."""
    low, high = _bounds(p)
    x = math.log(float(value)) if p.log else float(value)
    return min(1.0, max(0.0, (x - low) / (high - low)))


def from_unit(p: SearchParameter, unit: float) -> ParamValue:
    """The parameter value at ``unit`` (clamped into [0, 1]; ints rounded)."""
    low, high = _bounds(p)
    x = low + min(1.0, max(0.0, unit)) * (high - low)
    value = math.exp(x) if p.log else x
    assert p.low is not None and p.high is not None
    value = min(p.high, max(p.low, value))
    return round(value) if p.type == "int" else value


def distribution(p: SearchParameter) -> BaseDistribution:
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    if p.type == "categorical":
        assert p.choices is not None
        return CategoricalDistribution(p.choices)
    assert p.low is not None and p.high is not None
    if p.type == "int":
        return IntDistribution(int(p.low), int(p.high), log=p.log)
    return FloatDistribution(p.low, p.high, log=p.log)


def distributions(space: Sequence[SearchParameter]) -> dict[str, BaseDistribution]:
    return {p.name: distribution(p) for p in space}
