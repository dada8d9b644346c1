"""Exploration: sample something not tried, as TPE does.

Draws from the density of the study's good candidates and keeps the draw with the highest
expected-improvement ratio ``l/g`` (:mod:`parzen`), so it learns from every measured
candidate, whichever strategy produced it, and steers away from where runs failed. With
nothing measured yet, ``l`` is the broad prior: a random start-up sample.
"""

from __future__ import annotations

import numpy as np

from zeroshot_kernel.auto_research.agents.parzen import Landscape
from zeroshot_kernel.auto_research.protocol import ScoutProposal
from zeroshot_kernel.auto_research.records import ResearchState
from zeroshot_kernel.auto_research.task import ResearchTask

DRAWS = 24


def explore(task: ResearchTask, state: ResearchState, seed: int) -> ScoutProposal:
    spec = task.spec
    landscape = Landscape.fit(spec, state.candidates.values())
    rng = np.random.default_rng(seed)
    params, ratio = landscape.best(landscape.draw(rng, DRAWS))
    how = (
        "random start-up sample"
        if landscape.measured == 0
        else f"TPE sample (the best log l/g {ratio:.3g} of {DRAWS} draws from l)"
    )
    return ScoutProposal(
        strategy="exploration",
        approach="exploration:tpe",
        params=spec.check_params(params),
        rationale=f"{how}; {landscape.describe()}",
    )
