"""Pruning: stop an experiment whose learning curve says it cannot beat the runs before it.

An experiment may report intermediate values of the task's metric while it runs, each on a
line of its own with a ``step`` (a whole number that grows: an epoch, an iteration)::

    ZEROSHOT_METRIC {"name": "val_loss", "value": 0.41, "step": 3}

A line with a step is an intermediate value only: the run's metric is still the last line
*without* a step (or the scorer's). The runner reads these lines as the output streams and
records them as the run's learning curve (:class:`LearningCurve`, at most
:data:`MAX_CURVE_POINTS` points: past that every other point is dropped, evenly, and the
last one is always kept). Lines that are not well formed (a step that is not a whole
number in ``[0, MAX_STEP]``, a value that is not a finite number, a step that does not grow)
are counted and ignored.

With ``pruner:`` in ``task.yaml`` (off by default), the runner asks the pruner at each
reported step whether the run can still beat the runs before it. The rules are Optuna's
(``MedianPruner``, ``SuccessiveHalvingPruner``), written here from their definitions:

- ``median``: past ``warmupSteps``, at the first reported step of every ``intervalSteps``,
  the run's best value so far is compared with the median of the values the earlier
  completed runs recorded at that same step; worse than the median (and at least
  ``minRuns`` of them there): pruned.
- ``successive-halving``: rung ``k`` is at step ``minResource * reductionFactor **
  (minEarlyStoppingRate + k)``; the run's value when it first reports a step at or past a
  rung competes with the earlier runs' values there (completed and pruned runs alike), and
  only the best ``1/reductionFactor`` of them (at least the best one) go on: the others are
  pruned. With fewer than ``minRuns`` earlier runs at a rung, the run goes on.

The earlier runs are the recorded runs, on the same seed, of the study's other candidates
(the incumbent's among them): every candidate is measured on the same seed sequence, so
their curves saw the same data. The incumbent itself, and the baseline, are never pruned.
A pruned run's process group (its box) is killed at once and it is recorded as ``pruned``
with its curve and the step and value it was pruned at (:class:`PruneDecision`); it has no
metric, so, like any run that is not ``ok``, it never supports an adoption. The decision
depends on the curve only, never on timing: a run whose last lines prune it is pruned even
when it ended before they were read, so a recorded seed reproduces its outcome.

Trust (``containment.md``): the curve is what the candidate printed, so it can lie. A
lying curve decides only about its own run (kept running, then measured by its final
metric like any other, or pruned, which never adopts). As a reference for later runs, a
curve is never taken to be better at any step than where its run ended: the final metric
(the scorer's, for a scored task) of a completed run, the last value of a pruned one; and
with ``minRuns`` at 3 or more no single earlier run decides a later one's fate alone.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Protocol

from pydantic import BeforeValidator, Field

from zeroshot_kernel.contract.model import ContractModel

STEP_KEY = "step"
MAX_CURVE_POINTS = 256
"""The points of a learning curve kept in the records (the last one is kept besides)."""
MAX_STEP = 1_000_000_000
MAX_REPORTS = 100_000
"""Intermediate lines read from one run; later ones are counted but neither recorded nor
judged (an experiment printing without end costs the controller nothing more)."""

Direction = Literal["minimize", "maximize"]


class MedianPruner(ContractModel):
    """``pruner: {kind: median, ...}`` (Optuna's ``MedianPruner``)."""

    kind: Literal["median"]
    warmup_steps: Annotated[int, Field(ge=0, le=MAX_STEP)] = 0
    """No pruning before this step."""
    interval_steps: Annotated[int, Field(ge=1, le=MAX_STEP)] = 1
    """Judge at the first reported step of each interval past the warm-up."""
    min_runs: Annotated[int, Field(ge=1, le=1000)] = 3
    """Earlier completed runs that must have a value at a step before it can prune there."""


class SuccessiveHalvingPruner(ContractModel):
    """``pruner: {kind: successive-halving, ...}`` (Optuna's ``SuccessiveHalvingPruner``)."""

    kind: Literal["successive-halving"]
    min_resource: Annotated[int, Field(ge=1, le=MAX_STEP)] = 1
    """The step of the first rung."""
    reduction_factor: Annotated[int, Field(ge=2, le=100)] = 4
    """Rungs are this factor apart, and the best ``1/reductionFactor`` go on at each."""
    min_early_stopping_rate: Annotated[int, Field(ge=0, le=30)] = 0
    min_runs: Annotated[int, Field(ge=1, le=1000)] = 3
    """Earlier runs that must have reached a rung before it can prune there."""


KINDS = ("median", "successive-halving")


def _check_kind(value: Any) -> Any:
    """A clear error for a missing or unknown ``kind`` (before the union is tried)."""
    if isinstance(value, dict) and value.get("kind") not in KINDS:
        kind = value.get("kind")
        got = "none given" if kind is None else f"not {kind!r}"
        raise ValueError(f"a pruner's kind is median or successive-halving ({got})")
    return value


PrunerSpec = Annotated[
    MedianPruner | SuccessiveHalvingPruner,
    Field(discriminator="kind"),
    BeforeValidator(_check_kind),
]
"""The ``pruner`` of ``task.yaml``."""


class LearningCurve(ContractModel):
    """The intermediate values one run reported, as recorded (bounded)."""

    steps: list[int]
    values: list[float]
    stride: int = 1
    """Every ``stride``-th reported point is kept (1 until the curve was thinned)."""
    reported: int = 0
    """Well-formed points reported (kept or not)."""
    ignored: int = 0
    """Intermediate lines that were malformed or did not grow the step."""
    last_step: int | None = None
    last_value: float | None = None
    """The last reported point (kept even when thinning dropped it from ``steps``)."""

    def points(self) -> dict[int, float]:
        """Values by step, the last point included."""
        found = dict(zip(self.steps, self.values, strict=False))
        if self.last_step is not None and self.last_value is not None:
            found[self.last_step] = self.last_value
        return found


class PruneDecision(ContractModel):
    """Why a run was pruned: where, at what value, by which rule."""

    step: int
    value: float
    """The run's last reported value (at ``step``)."""
    rule: str
    """The pruner's comparison, in words."""

    def describe(self) -> str:
        return f"pruned at step {self.step} (value {self.value:.6g}): {self.rule}"


@dataclass
class CurveRecorder:
    """Builds a :class:`LearningCurve` from the points of one run, in order."""

    limit: int = MAX_CURVE_POINTS
    steps: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    stride: int = 1
    reported: int = 0
    ignored: int = 0
    last_step: int | None = None
    last_value: float | None = None

    def add(self, step: int, value: float) -> bool:
        """Record a point; ``False`` (counted as ignored) when its step does not grow."""
        if self.last_step is not None and step <= self.last_step:
            self.ignored += 1
            return False
        index, self.reported = self.reported, self.reported + 1
        self.last_step, self.last_value = step, value
        if index % self.stride == 0:  # kept points are the reported ones at multiples
            self.steps.append(step)
            self.values.append(value)
            if len(self.steps) > self.limit:
                self.steps, self.values = self.steps[::2], self.values[::2]
                self.stride *= 2
        return True

    def curve(self) -> LearningCurve | None:
        if not self.reported and not self.ignored:
            return None
        return LearningCurve(
            steps=list(self.steps),
            values=list(self.values),
            stride=self.stride,
            reported=self.reported,
            ignored=self.ignored,
            last_step=self.last_step,
            last_value=self.last_value,
        )


MALFORMED = "malformed"


def read_point(line: str, prefix: str, metric: str) -> tuple[int, float] | str | None:
    """The ``(step, value)`` of an intermediate line naming ``metric``; :data:`MALFORMED`
    for one whose step or value is not acceptable; ``None`` for any other line (a final
    metric line included)."""
    if not line.startswith(prefix) or f'"{STEP_KEY}"' not in line:
        return None
    try:
        document = json.loads(line[len(prefix) :])
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(document, dict) or document.get("name") != metric:
        return None
    if STEP_KEY not in document:
        return None
    step, value = document.get(STEP_KEY), document.get("value")
    if isinstance(step, float) and step.is_integer():
        step = int(step)
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= MAX_STEP:
        return MALFORMED
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return MALFORMED
    return step, float(value)


@dataclass(frozen=True)
class Reference:
    """An earlier run's curve as the pruner sees it: values by step, none better than
    where its run ended."""

    candidate_id: str
    completed: bool
    """Whether the run ended ``ok`` (the median compares with completed runs only)."""
    points: Mapping[int, float]
    steps: tuple[int, ...]
    """The steps of ``points``, ascending."""

    def first_at_or_after(self, step: int) -> float | None:
        """Its value at the first recorded step at or past ``step`` (a rung's value)."""
        for recorded in self.steps:
            if recorded >= step:
                return self.points[recorded]
        return None


class _Run(Protocol):
    """What :func:`reference_of` reads of a recorded run (an ``ExperimentResult``)."""

    @property
    def status(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def metric(self) -> float | None: ...
    @property
    def curve(self) -> LearningCurve | None: ...


def reference_of(candidate_id: str, run: _Run, direction: Direction) -> Reference | None:
    """``run`` as a reference for later runs (``None`` when it cannot be one: it has no
    curve, or ended neither ``ok`` nor ``pruned``). Each value is bounded by where the run
    ended (its final metric, or the last value of a pruned run), so a curve that lies
    about its way there cannot look better than its measured end."""
    curve = run.curve
    if curve is None or curve.last_step is None:
        return None
    if run.status == "ok" and run.metric is not None:
        end = run.metric
    elif run.status == "pruned" and curve.last_value is not None:
        end = curve.last_value
    else:
        return None
    bound = max if direction == "minimize" else min
    points = {step: bound(value, end) for step, value in sorted(curve.points().items())}
    return Reference(candidate_id, run.status == "ok", points, tuple(points))


def references_by_seed(
    runs: Iterable[tuple[str, _Run]], direction: Direction, *, exclude: str = ""
) -> dict[int, tuple[Reference, ...]]:
    """The references of recorded ``(candidate id, run)`` pairs, by seed, leaving out the
    runs of ``exclude`` (the candidate being measured)."""
    found: dict[int, list[Reference]] = {}
    for candidate_id, run in runs:
        if candidate_id == exclude:
            continue
        reference = reference_of(candidate_id, run, direction)
        if reference is not None:
            found.setdefault(run.seed, []).append(reference)
    return {seed: tuple(refs) for seed, refs in found.items()}


@dataclass(frozen=True)
class Pruning:
    """What the experiment runner needs to prune one candidate's runs: the task's pruner,
    its direction and the earlier runs' curves by seed."""

    pruner: MedianPruner | SuccessiveHalvingPruner
    direction: Direction
    references: Mapping[int, Sequence[Reference]]

    def watch(self, seed: int) -> Watch:
        return Watch(self.pruner, self.direction, tuple(self.references.get(seed, ())))


def _better(direction: Direction, a: float, b: float) -> bool:
    return a < b if direction == "minimize" else a > b


def median_rule(
    pruner: MedianPruner,
    direction: Direction,
    step: int,
    previous_step: int | None,
    best: float,
    references: Sequence[Reference],
) -> str | None:
    """Why the run is pruned at ``step`` (its best value so far ``best``; the step it
    reported before, ``previous_step``) by the median rule, or ``None``."""
    if step < pruner.warmup_steps:
        return None
    lowest = (step - pruner.warmup_steps) // pruner.interval_steps * pruner.interval_steps
    if previous_step is not None and previous_step >= lowest + pruner.warmup_steps:
        return None  # not the first reported step of its interval
    there = [r.points[step] for r in references if r.completed and step in r.points]
    if len(there) < pruner.min_runs:
        return None
    median = statistics.median(there)
    if not _better(direction, median, best):
        return None
    return (
        f"its best value so far {best:.6g} is worse than the median {median:.6g} of "
        f"{len(there)} earlier runs at step {step}"
    )


def halving_rule(
    pruner: SuccessiveHalvingPruner,
    direction: Direction,
    step: int,
    value: float,
    rung: int,
    references: Sequence[Reference],
) -> tuple[int, str | None]:
    """The run's next rung after reporting ``value`` at ``step`` (its current rung
    ``rung``), and why it is pruned there, or ``None``."""
    while True:
        promotion = pruner.min_resource * pruner.reduction_factor ** (
            pruner.min_early_stopping_rate + rung
        )
        if step < promotion:
            return rung, None
        found = [r.first_at_or_after(promotion) for r in references]
        competing = [v for v in found if v is not None]
        if len(competing) >= pruner.min_runs:
            ranked = sorted([*competing, value], reverse=direction == "maximize")
            keep = max(1, len(ranked) // pruner.reduction_factor)
            cutoff = ranked[keep - 1]
            if _better(direction, cutoff, value):
                return rung, (
                    f"{value:.6g} at rung {rung} (step {promotion}) is not among the best "
                    f"{keep} of {len(ranked)} runs there (1/{pruner.reduction_factor}; "
                    f"the cut-off is {cutoff:.6g})"
                )
        rung += 1


@dataclass
class Watch:
    """The pruner's view of one live run: fed its points in order, it says when to stop."""

    pruner: MedianPruner | SuccessiveHalvingPruner
    direction: Direction
    references: tuple[Reference, ...]
    previous_step: int | None = None
    best: float | None = None
    rung: int = 0

    def report(self, step: int, value: float) -> PruneDecision | None:
        """Judge the run after it reported ``value`` at ``step`` (steps grow)."""
        if self.best is None or _better(self.direction, value, self.best):
            self.best = value
        previous, self.previous_step = self.previous_step, step
        if isinstance(self.pruner, MedianPruner):
            rule = median_rule(
                self.pruner, self.direction, step, previous, self.best, self.references
            )
        else:
            self.rung, rule = halving_rule(
                self.pruner, self.direction, step, value, self.rung, self.references
            )
        return None if rule is None else PruneDecision(step=step, value=value, rule=rule)


class _Measured(Protocol):
    @property
    def experiment(self) -> _Run: ...


class _Manifest(Protocol):
    @property
    def measurements(self) -> Sequence[_Measured]: ...


def pruning_for(
    pruner: MedianPruner | SuccessiveHalvingPruner | None,
    direction: Direction,
    candidates: Mapping[str, _Manifest],
    candidate_id: str,
) -> Pruning | None:
    """The pruning of ``candidate_id``'s runs: ``pruner`` against the curves the study's
    other ``candidates`` (their manifests) recorded; ``None`` without a pruner."""
    if pruner is None:
        return None
    runs = (
        (other, measurement.experiment)
        for other, manifest in candidates.items()
        for measurement in manifest.measurements
    )
    return Pruning(pruner, direction, references_by_seed(runs, direction, exclude=candidate_id))
