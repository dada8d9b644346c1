"""Challenge: question the incumbent, by re-measuring it or by perturbing it.

When a rival sits within the noise floor of the incumbent and the incumbent has few
measurements, the lead may be luck: ask for a re-measurement. Otherwise probe the
incumbent's neighbourhood with Gaussian steps in the unit cube at several sizes, keeping
the step with the highest expected improvement under the Gaussian process fitted to every
measured candidate (:mod:`surrogate`): of the nearby points, the one the study's evidence
favours, at the distance it favours.
"""

from __future__ import annotations

import numpy as np

from zeroshot_kernel.auto_research.agents.surrogate import Surrogate, neighbours
from zeroshot_kernel.auto_research.noise_floor import compare, ranked
from zeroshot_kernel.auto_research.protocol import REMEASURE, ScoutProposal
from zeroshot_kernel.auto_research.records import ResearchState
from zeroshot_kernel.auto_research.task import ResearchTask

STEPS = (0.005, 0.02, 0.08)
"""Step sizes in the unit cube, from fine tuning to the edge of the neighbourhood. Longer
jumps are exploration's (:mod:`trust_region`): with steps of 0.2 here, the expected
improvement favoured them for their uncertainty, and a study of rosenbrock spent its
challenges far up the valley's walls."""
DRAWS = 16
"""Steps of each size."""


def challenge(task: ResearchTask, state: ResearchState, seed: int) -> ScoutProposal:
    spec = task.spec
    rng = np.random.default_rng(seed)
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
    steps = [neighbours(spec.search_space, base, rng, step) for step in STEPS for _ in range(DRAWS)]
    surrogate = Surrogate.fit_to(spec, state.candidates.values())
    params, score = surrogate.best([s for s in steps if s != base] or steps)
    source = incumbent.candidate_id if incumbent else "the starting candidate"
    return ScoutProposal(
        strategy="challenge",
        approach="challenge:perturb",
        params=params,
        rationale=f"the highest expected improvement (log EI {score:.3g}) of "
        f"{len(STEPS) * DRAWS} Gaussian steps (sigma {', '.join(map(str, STEPS))} of the unit "
        f"cube) around {source}; {surrogate.describe()}",
    )
