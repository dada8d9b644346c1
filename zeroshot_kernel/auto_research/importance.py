"""Inside a study: its measured candidates as data, and how much each parameter mattered.

Every candidate the trusted measure step built and measured (every run ok) becomes a
completed trial of a fresh in-memory optuna study: its parameters (with distributions from
the task's ``searchSpace``) and its trusted measured metric (the mean over its
measurements), in the task's direction. :func:`parameter_importance` hands that study to
optuna's importance evaluators. The default, PED-ANOVA, needs nothing beyond optuna and
numpy; fANOVA and mean decrease in impurity need scikit-learn (the ``tasks`` extra) and
fall back to PED-ANOVA, saying so, when it is missing.

A study that cannot be rated (fewer than two measured candidates, a code task without
parameters, every parameter or every metric the same) gives an empty result whose
``reason`` says why, never an error.

Example::

    from zeroshot_kernel.auto_research.importance import load_measured, parameter_importance

    measured = load_measured(".", "branin")
    weights = parameter_importance(measured)
    print(dict(weights) or weights.reason)    # {'x1': 0.71, 'x2': 0.29}
"""

from __future__ import annotations

import importlib.util
import math
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from zeroshot_kernel.auto_research.records import ResearchRecords
from zeroshot_kernel.auto_research.studies.catalog import records_for
from zeroshot_kernel.auto_research.task import (
    Direction,
    ParamValue,
    SearchParameter,
    TaskError,
    resolve_task,
)

if TYPE_CHECKING:
    import optuna

EvaluatorName = Literal["ped-anova", "fanova", "mean-decrease-impurity"]
EVALUATORS: tuple[EvaluatorName, ...] = ("ped-anova", "fanova", "mean-decrease-impurity")
MIN_MEASURED = 2
"""Measured candidates needed before anything can be rated."""


@dataclass(frozen=True)
class MeasuredCandidate:
    """A candidate the trusted measure step built and measured, every run ok."""

    candidate_id: str
    parent_id: str
    round: int
    """The round that made it (0: the task's starting candidate)."""
    params: dict[str, ParamValue]
    metric: float
    """The trusted measured metric: the mean of its measurements."""
    values: tuple[float, ...]
    """Each measurement's metric, in the order they were run."""


@dataclass(frozen=True)
class MeasuredStudy:
    """A study's measured candidates with what is needed to read them: the task's metric,
    direction and search space, and the incumbent."""

    study: str
    task: str
    metric: str
    direction: Direction
    search_space: tuple[SearchParameter, ...]
    candidates: tuple[MeasuredCandidate, ...]
    """In candidate-id order (the order they were made)."""
    incumbent_id: str | None
    problem: str | None = None
    """Why the study's task or records could not be read (then ``candidates`` is empty)."""

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.search_space)

    @property
    def incumbent(self) -> MeasuredCandidate | None:
        return next((c for c in self.candidates if c.candidate_id == self.incumbent_id), None)

    def best(self) -> MeasuredCandidate | None:
        """The measured candidate with the best metric in the task's direction."""
        if not self.candidates:
            return None
        pick = min if self.direction == "minimize" else max
        return pick(self.candidates, key=lambda c: c.metric)


class Importances(dict[str, float]):
    """Parameter name -> importance (non-negative, summing to 1, most important first), or
    empty with ``reason`` saying why nothing was rated."""

    def __init__(
        self,
        weights: dict[str, float] | None = None,
        *,
        reason: str = "",
        evaluator: str = "",
        measured: int = 0,
        constant: tuple[str, ...] = (),
        note: str = "",
    ) -> None:
        super().__init__(weights or {})
        self.reason = reason
        """Why the result is empty (``""`` when parameters were rated)."""
        self.evaluator = evaluator
        """The optuna evaluator that rated them (``PedAnovaImportanceEvaluator``...)."""
        self.measured = measured
        """Measured candidates the rating used."""
        self.constant = constant
        """Parameters that held one value in every measured candidate (weight 0)."""
        self.note = note
        """Anything else a reader should know (a fallback, a lone varied parameter)."""

    def __repr__(self) -> str:
        if not self:
            return f"Importances({{}}, reason={self.reason!r})"
        return f"Importances({dict(self)!r}, evaluator={self.evaluator!r})"


def load_measured(
    workspace: str | os.PathLike[str], study: str, *, task: str | None = None
) -> MeasuredStudy:
    """The measured candidates of ``study`` in ``workspace`` (``task``: the task folder or
    bundled name, when not the one the study records)."""
    return measured_study(records_for(workspace, study), task=task)


def _other_studies(records: ResearchRecords) -> str:
    """The workspace's studies, for a name that matches none (read only, never migrated)."""
    others = sorted(
        folder.name
        for folder in records.root.parent.glob("*")
        if folder.name != records.study
        and not folder.is_symlink()
        and (folder / "candidates").is_dir()
    )
    if not others:
        return "this workspace has no study yet: start one with `zeroshot research run TASK`"
    more = f" and {len(others) - 10} more" if len(others) > 10 else ""
    return f"its studies: {', '.join(others[:10])}{more}"


def measured_study(records: ResearchRecords, *, task: str | None = None) -> MeasuredStudy:
    """The measured candidates of the study ``records`` holds, read with its task (the one
    its ``study.json`` names, unless ``task`` is given)."""
    workspace = records.root.parents[2]  # <workspace>/.zeroshot/research/<study>
    try:
        recorded = records.read_study()
        manifests = records.candidates()
        incumbent = records.read_incumbent()
    except (OSError, ValueError) as damaged:
        return _unreadable(records.study, "", f"the study's records cannot be read: {damaged}")
    task = task or (recorded.task if recorded is not None else None)
    if task is None:
        why = (
            f"has no records yet; {_other_studies(records)}"
            if not manifests
            else "does not say which task it researches (no study.json); pass task="
        )
        return _unreadable(records.study, "", f"study {records.study!r} {why}")
    try:
        spec = resolve_task(task, workspace).spec
    except (TaskError, OSError, ValueError) as missing:
        return _unreadable(
            records.study, task, f"the study's task {task!r} cannot be read: {missing}"
        )
    measured = []
    for manifest in sorted(manifests.values(), key=lambda m: m.candidate_id):
        metric = manifest.metric
        if manifest.status != "ok" or metric is None or not math.isfinite(metric):
            continue
        measured.append(
            MeasuredCandidate(
                candidate_id=manifest.candidate_id,
                parent_id=manifest.parent_id,
                round=manifest.round,
                params=dict(manifest.params),
                metric=metric,
                values=tuple(manifest.values),
            )
        )
    return MeasuredStudy(
        study=records.study,
        task=task,
        metric=spec.metric,
        direction=spec.direction,
        search_space=tuple(spec.search_space),
        candidates=tuple(measured),
        incumbent_id=incumbent.candidate_id if incumbent else None,
    )


def _unreadable(study: str, task: str, problem: str) -> MeasuredStudy:
    return MeasuredStudy(
        study=study,
        task=task,
        metric="metric",
        direction="minimize",
        search_space=(),
        candidates=(),
        incumbent_id=None,
        problem=problem,
    )


@dataclass
class _Trials:
    study: optuna.Study
    skipped: list[str] = field(default_factory=list)
    """Candidates left out: their parameters no longer fit the task's search space."""


def optuna_study(measured: MeasuredStudy) -> optuna.Study:
    """A fresh in-memory optuna study with one completed trial per measured candidate (its
    parameters and trusted metric), in the task's direction. Candidates whose parameters
    fall outside the task's current search space are left out."""
    return _trials(measured).study


def _trials(measured: MeasuredStudy) -> _Trials:
    import optuna
    from optuna.trial import create_trial

    from zeroshot_kernel.auto_research.agents.space import distributions

    space = distributions(measured.search_space)
    with _quiet():
        study = optuna.create_study(direction=measured.direction)
    found = _Trials(study)
    for candidate in measured.candidates:
        try:
            params = {p.name: p.check(candidate.params[p.name]) for p in measured.search_space}
            trial = create_trial(params=params, distributions=space, value=candidate.metric)
        except (KeyError, ValueError):
            found.skipped.append(candidate.candidate_id)
            continue
        study.add_trial(trial)
    return found


def parameter_importance(
    source: MeasuredStudy | ResearchRecords | optuna.Study,
    *,
    evaluator: EvaluatorName | Any = "ped-anova",
) -> Importances:
    """How much each parameter mattered to the measured metric, by optuna's importance
    evaluators: weights that sum to 1 (constant parameters get 0), most important first;
    empty, with ``reason``, when nothing can be rated.

    ``source`` is a study's measured candidates, its records, or an optuna study built by
    :func:`optuna_study`. ``evaluator`` is ``"ped-anova"`` (the default; optuna and numpy
    only), ``"fanova"`` or ``"mean-decrease-impurity"`` (scikit-learn; PED-ANOVA is used,
    and ``note`` says so, without it), or an optuna ``BaseImportanceEvaluator``.
    """
    import optuna

    if isinstance(source, ResearchRecords):
        source = measured_study(source)
    skipped: list[str] = []
    if isinstance(source, MeasuredStudy):
        if source.problem is not None:
            return Importances(reason=source.problem)
        if not source.search_space:
            return Importances(
                reason=f"no parameters to rate: task {Path(source.task).name} "
                "has no searchSpace (a code task changes files only)"
            )
        built = _trials(source)
        study, skipped = built.study, built.skipped
    else:
        study = source
    trials = [
        t
        for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        if t.value is not None and math.isfinite(t.value)
    ]
    left_out = f" ({len(skipped)} left out: parameters outside the search space)" if skipped else ""
    if len(trials) < MIN_MEASURED:
        return Importances(
            reason=f"{len(trials)} measured candidate(s){left_out}: importance "
            f"needs at least {MIN_MEASURED}",
            measured=len(trials),
        )
    names = sorted({name for t in trials for name in t.params})
    if not names:
        return Importances(
            reason="no parameters to rate: the measured candidates have none", measured=len(trials)
        )
    varied = [n for n in names if len({repr(t.params.get(n)) for t in trials}) > 1]
    constant = tuple(n for n in names if n not in varied)
    if not varied:
        return Importances(
            reason=f"no parameter varied: {', '.join(names)} held one value in "
            f"all {len(trials)} measured candidates",
            measured=len(trials),
            constant=constant,
        )
    if len({t.value for t in trials}) == 1:
        return Importances(
            reason=f"all {len(trials)} measured candidates scored the same: nothing to attribute",
            measured=len(trials),
            constant=constant,
        )
    chosen, note = _evaluator(evaluator)
    if len(varied) == 1:
        weights = {varied[0]: 1.0}
        note = _join(note, f"only {varied[0]} varied, so it carries all the weight")
    else:
        with _quiet():
            rated = optuna.importance.get_param_importances(study, evaluator=chosen, params=varied)
        weights = {name: max(0.0, float(value)) for name, value in rated.items()}
        total = sum(weights.values())
        weights = (
            {k: v / total for k, v in weights.items()}
            if total > 0
            else {k: 1.0 / len(weights) for k in weights}
        )
    ordered = dict(sorted(weights.items(), key=lambda item: (-item[1], item[0])))
    ordered.update({name: 0.0 for name in constant})
    if constant:
        note = _join(note, f"{', '.join(constant)} held one value throughout (weight 0)")
    if skipped:
        note = _join(
            note,
            f"{len(skipped)} candidate(s) left out: parameters outside the task's search space",
        )
    return Importances(
        ordered, evaluator=type(chosen).__name__, measured=len(trials), constant=constant, note=note
    )


def sklearn_available() -> bool:
    """Whether scikit-learn (the ``tasks`` extra) is installed: fANOVA and mean decrease in
    impurity need it."""
    return importlib.util.find_spec("sklearn") is not None


def _evaluator(evaluator: Any) -> tuple[Any, str]:
    from optuna.importance import (
        BaseImportanceEvaluator,
        FanovaImportanceEvaluator,
        MeanDecreaseImpurityImportanceEvaluator,
        PedAnovaImportanceEvaluator,
    )

    if isinstance(evaluator, BaseImportanceEvaluator):
        return evaluator, ""
    if evaluator not in EVALUATORS:
        raise ValueError(
            f"evaluator {evaluator!r}: use one of {', '.join(EVALUATORS)} or an "
            "optuna BaseImportanceEvaluator"
        )
    if evaluator == "ped-anova":
        return PedAnovaImportanceEvaluator(), ""
    if not sklearn_available():
        return PedAnovaImportanceEvaluator(), (
            f"{evaluator} needs scikit-learn (pip install 'zeroshot-workbench[tasks]'); "
            "rated with PED-ANOVA instead"
        )
    if evaluator == "fanova":
        return FanovaImportanceEvaluator(seed=0), ""
    return MeanDecreaseImpurityImportanceEvaluator(seed=0), ""


def _join(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


@contextmanager
def _quiet() -> Iterator[None]:
    """Silence optuna's per-study log line, its warnings about few trials and its
    experimental-API warnings, then restore them (as the exploration scout does)."""
    import optuna

    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            warnings.filterwarnings("ignore", message=".*(trials|regime|quantile).*")
            yield
    finally:
        optuna.logging.set_verbosity(verbosity)
