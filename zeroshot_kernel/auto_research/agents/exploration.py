"""Exploration: the point of the whole space with the highest expected improvement.

A uniform sample of the space, refined around its most promising points, scored by the
Gaussian process fitted to every measured candidate, whichever strategy produced it,
failures included (:mod:`surrogate`): far from what was tried where the model is unsure,
near the best where it expects a gain, away from where runs failed. With nothing measured
yet every point is as promising: a random start-up sample.
"""

from __future__ import annotations

import numpy as np

from zeroshot_kernel.auto_research.agents.surrogate import Surrogate, uniform
from zeroshot_kernel.auto_research.protocol import ScoutProposal
from zeroshot_kernel.auto_research.records import ResearchState
from zeroshot_kernel.auto_research.task import ResearchTask

DRAWS = 256


def explore(task: ResearchTask, state: ResearchState, seed: int) -> ScoutProposal:
    spec = task.spec
    surrogate = Surrogate.fit_to(spec, state.candidates.values())
    rng = np.random.default_rng(seed)
    params, score = surrogate.refine(uniform(spec.search_space, rng, DRAWS), rng)
    how = (
        "random start-up sample"
        if surrogate.fit is None
        else f"the highest expected improvement (log EI {score:.3g}) of {DRAWS} uniform "
        "draws and steps around the best of them"
    )
    return ScoutProposal(
        strategy="exploration",
        approach="exploration:ei",
        params=spec.check_params(params),
        rationale=f"{how}; {surrogate.describe()}",
    )
