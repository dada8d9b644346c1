"""Exploration: the point of the trust region with the highest expected improvement.

A uniform sample of the box around the incumbent (:mod:`trust_region`: most of the space
while adoptions come, smaller after rejections in a row), refined around its most promising
points, scored by the Gaussian process fitted to every measured candidate, whichever
strategy produced it, failures included (:mod:`surrogate`): far from what was tried where
the model is unsure, near the best where it expects a gain, away from where runs failed.
With nothing measured yet every point is as promising: a random start-up sample of the
whole space.
"""

from __future__ import annotations

import numpy as np

from zeroshot_kernel.auto_research.agents.surrogate import Surrogate, uniform
from zeroshot_kernel.auto_research.agents.trust_region import box
from zeroshot_kernel.auto_research.protocol import ScoutProposal
from zeroshot_kernel.auto_research.records import ResearchState
from zeroshot_kernel.auto_research.task import Params, ResearchTask

DRAWS = 256


def explore(task: ResearchTask, state: ResearchState, seed: int) -> ScoutProposal:
    spec = task.spec
    surrogate = Surrogate.fit_to(spec, state.candidates.values())
    rng = np.random.default_rng(seed)
    draws, where = _draws(task, state, surrogate, rng)
    params, score = surrogate.refine(draws, rng)
    how = (
        "random start-up sample"
        if surrogate.fit is None
        else f"the highest expected improvement (log EI {score:.3g}) of {DRAWS} uniform "
        f"draws in {where} and steps around the best of them"
    )
    return ScoutProposal(
        strategy="exploration",
        approach="exploration:ei",
        params=spec.check_params(params),
        rationale=f"{how}; {surrogate.describe()}",
    )


def _draws(
    task: ResearchTask, state: ResearchState, surrogate: Surrogate, rng: np.random.Generator
) -> tuple[list[Params], str]:
    """The uniform sample, and where it was drawn: the trust region once there is an
    incumbent and a fitted process, the whole space before."""
    spec = task.spec
    incumbent = (
        state.candidates.get(state.incumbent.candidate_id) if state.incumbent is not None else None
    )
    if incumbent is not None and surrogate.fit is not None:
        try:
            centre = spec.check_params(incumbent.params)
        except ValueError:
            pass  # measured before the search space changed: no centre in this space
        else:
            region = box(spec, state, centre, surrogate)
            return region.draw(
                spec, rng, DRAWS
            ), f"{region.describe()} around {incumbent.candidate_id}"
    return uniform(spec.search_space, rng, DRAWS), "the whole space"
