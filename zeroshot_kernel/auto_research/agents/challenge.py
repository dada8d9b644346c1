"""Challenge: question the incumbent, by re-measuring it or by perturbing it.

When a rival sits within the noise floor of the incumbent and the incumbent has few
measurements, the lead may be luck: ask for a re-measurement. Otherwise probe the
incumbent's neighbourhood with Gaussian steps in the unit cube whose size follows the
one-fifth success rule, keeping the step with the highest expected-improvement ratio
``l/g`` (:mod:`parzen`): of the nearby points, the one the study's evidence favours.
"""

from __future__ import annotations

import random

from zeroshot_kernel.auto_research.agents.parzen import Landscape
from zeroshot_kernel.auto_research.agents.space import from_unit, to_unit
from zeroshot_kernel.auto_research.noise_floor import compare, ranked
from zeroshot_kernel.auto_research.protocol import REMEASURE, ScoutProposal
from zeroshot_kernel.auto_research.records import ResearchState
from zeroshot_kernel.auto_research.task import Params, ResearchTask

STEP = 0.05
GROW = 1.5
MIN_STEP = 0.002
MAX_STEP = 0.25
SWITCH_PROBABILITY = 0.2
DRAWS = 8


def challenge(task: ResearchTask, state: ResearchState, seed: int) -> ScoutProposal:
    spec = task.spec
    rng = random.Random(seed)
    incumbent = (
        state.candidates.get(state.incumbent.candidate_id) if state.incumbent is not None else None
    )
    if incumbent is not None:
        rivals = [
            m for m in ranked(spec, state.candidates) if m.candidate_id != incumbent.candidate_id
        ]
        if rivals and incumbent.metric is not None and len(incumbent.values) < 2 * spec.repeats:
            comparison = compare(
                spec, state.candidates, rivals[0].candidate_id, incumbent.candidate_id
            )
            if not comparison.worse_beyond_noise:
                return ScoutProposal(
                    strategy="challenge",
                    approach=REMEASURE,
                    params=spec.check_params(incumbent.params),
                    rationale="the lead may be noise: "
                    + comparison.describe(spec.metric)
                    + "; re-measure the incumbent",
                )
    base = spec.check_params(incumbent.params) if incumbent else task.start_params
    step = _step(state)
    steps = [_perturb(task, base, step, rng) for _ in range(DRAWS)]
    landscape = Landscape.fit(spec, state.candidates.values())
    params, ratio = landscape.best(steps)
    source = incumbent.candidate_id if incumbent else "the starting candidate"
    return ScoutProposal(
        strategy="challenge",
        approach="challenge:perturb",
        params=params,
        rationale=f"the best log l/g ({ratio:.3g}) of {DRAWS} Gaussian steps (sigma "
        f"{step:.3g} of the unit cube) around {source}; {landscape.describe()}",
    )


def _perturb(task: ResearchTask, base: Params, step: float, rng: random.Random) -> Params:
    params: Params = {}
    for p in task.spec.search_space:
        if p.type == "categorical":
            assert p.choices is not None
            others = [c for c in p.choices if c != base[p.name]]
            switch = bool(others) and rng.random() < SWITCH_PROBABILITY
            params[p.name] = rng.choice(others) if switch else base[p.name]
        else:
            params[p.name] = from_unit(p, to_unit(p, base[p.name]) + rng.gauss(0.0, step))
    return params


def _step(state: ResearchState) -> float:
    """The one-fifth success rule over past perturbations: a step that got adopted grows
    the next one, a step that did not shrinks it, so about one step in five succeeds."""
    step = STEP
    for result in state.results():
        if result.approach == "challenge:perturb":
            step *= GROW if result.disposition == "adopt" else GROW**-0.25
    return min(MAX_STEP, max(MIN_STEP, step))
