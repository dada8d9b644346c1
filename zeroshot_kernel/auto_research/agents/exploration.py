"""Exploration: sample something not tried, with optuna's TPE sampler.

Every measured candidate in the records becomes a finished trial of a fresh in-memory study
(failed ones as failed trials), and one ``ask`` gives the proposal, so the sampler learns
from all the research so far, whichever strategy produced it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import optuna
from optuna.samplers import TPESampler
from optuna.trial import FrozenTrial, TrialState, create_trial

from zeroshot_kernel.auto_research.agents.space import distributions
from zeroshot_kernel.auto_research.protocol import ScoutProposal
from zeroshot_kernel.auto_research.records import ResearchState
from zeroshot_kernel.auto_research.task import ResearchTask

STARTUP_TRIALS = 5


def explore(task: ResearchTask, state: ResearchState, seed: int) -> ScoutProposal:
    spec = task.spec
    space = distributions(spec.search_space)
    trials: list[FrozenTrial] = []
    for manifest in sorted(state.candidates.values(), key=lambda m: m.candidate_id):
        try:
            params = spec.check_params(manifest.params)
        except ValueError:
            continue
        if manifest.metric is not None and manifest.status == "ok":
            trials.append(create_trial(params=params, distributions=space, value=manifest.metric))
        else:
            trials.append(create_trial(params=params, distributions=space, state=TrialState.FAIL))
    sampler = TPESampler(seed=seed, n_startup_trials=STARTUP_TRIALS, multivariate=True)
    with _quiet():
        study = optuna.create_study(direction=spec.direction, sampler=sampler)
        study.add_trials(trials)
        proposal = study.ask(space).params
    finished = sum(t.state == TrialState.COMPLETE for t in trials)
    how = "random start-up sample" if finished < STARTUP_TRIALS else "TPE sample (multivariate)"
    return ScoutProposal(
        strategy="exploration",
        approach="exploration:tpe",
        params=spec.check_params(proposal),
        rationale=f"{how} from optuna fitted to {finished} measured candidates "
        f"({len(trials) - finished} failed)",
    )


@contextmanager
def _quiet() -> Iterator[None]:
    """Silence optuna's per-study logging and experimental warnings, then restore them."""
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            yield
    finally:
        optuna.logging.set_verbosity(verbosity)
