"""Synthesis: combine the best measured candidates into a new one (cross-entropy method).

A Gaussian is fitted to the best candidates in the unit cube (rank-weighted mean, their
covariance plus a small ridge) and several points are drawn from it; each categorical
parameter is drawn by rank-weighted vote. The covariance is what combines them: when the
best candidates line up along a valley, the proposal follows the valley. Of the draws it
keeps the one with the highest expected improvement under the Gaussian process fitted to
every measured candidate (:mod:`surrogate`), so failed and poor candidates elsewhere in the
study steer it too. With fewer than two
measured candidates the starting point and the centre of the space stand in.
"""

from __future__ import annotations

import math

import numpy as np

from zeroshot_kernel.auto_research.agents.space import from_unit, to_unit
from zeroshot_kernel.auto_research.agents.surrogate import Surrogate, reflect
from zeroshot_kernel.auto_research.noise_floor import ranked
from zeroshot_kernel.auto_research.protocol import ScoutProposal
from zeroshot_kernel.auto_research.records import ResearchState
from zeroshot_kernel.auto_research.task import Params, ResearchTask

ELITE = 3
RIDGE = 0.02
DRAWS = 64


def synthesize(task: ResearchTask, state: ResearchState, seed: int) -> ScoutProposal:
    spec = task.spec
    rng = np.random.default_rng(seed)
    best = ranked(spec, state.candidates)[:ELITE]
    parents: list[Params] = [spec.check_params(m.params) for m in best]
    names = [m.candidate_id for m in best]
    if not best:
        parents.append(task.start_params)
        names.append("the starting candidate")
    if len(parents) < 2:
        parents.append(
            {
                p.name: (p.choices[0] if p.choices is not None else from_unit(p, 0.5))
                for p in spec.search_space
            }
        )
        names.append("the centre of the space")
    weights = np.array([math.log(len(parents) + 1) - math.log(i + 1) for i in range(len(parents))])
    weights /= weights.sum()
    numeric = [p for p in spec.search_space if p.type != "categorical"]
    draws: list[Params] = [{} for _ in range(DRAWS)]
    if numeric:
        points = np.array([[to_unit(p, parent[p.name]) for p in numeric] for parent in parents])
        mean = weights @ points
        spread = points - mean
        covariance = (weights[:, None] * spread).T @ spread + RIDGE**2 * np.eye(len(numeric))
        for params, row in zip(
            draws, rng.multivariate_normal(mean, covariance, DRAWS), strict=True
        ):
            params.update(
                {p.name: from_unit(p, reflect(float(u))) for p, u in zip(numeric, row, strict=True)}
            )
    for params in draws:
        for p in spec.search_space:
            if p.type == "categorical":
                params[p.name] = parents[int(rng.choice(len(parents), p=weights))][p.name]
    surrogate = Surrogate.fit_to(spec, state.candidates.values())
    chosen, score = surrogate.best([{p.name: d[p.name] for p in spec.search_space} for d in draws])
    return ScoutProposal(
        strategy="synthesis",
        approach="synthesis:cem",
        params=chosen,
        rationale=f"the highest expected improvement (log EI {score:.3g}) of {DRAWS} draws from "
        f"a Gaussian fitted to the {len(parents)} best ({', '.join(names)}), rank-weighted; "
        + surrogate.describe(),
    )
