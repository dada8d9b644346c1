"""The scout agent: read the records, propose one direction by strategy. Never writes."""

from __future__ import annotations

from collections.abc import Callable

from zeroshot_kernel.auto_research.agents.challenge import challenge
from zeroshot_kernel.auto_research.agents.exploration import explore
from zeroshot_kernel.auto_research.agents.synthesis import synthesize
from zeroshot_kernel.auto_research.protocol import ScoutInput, ScoutProposal, Strategy
from zeroshot_kernel.auto_research.records import ResearchState
from zeroshot_kernel.auto_research.seeds import derive_seed
from zeroshot_kernel.auto_research.studies.catalog import records_for
from zeroshot_kernel.auto_research.task import ResearchTask, resolve_task

_STRATEGIES: dict[Strategy, Callable[[ResearchTask, ResearchState, int], ScoutProposal]] = {
    "exploration": explore,
    "synthesis": synthesize,
    "challenge": challenge,
}


def scout(request: ScoutInput) -> ScoutProposal:
    """Propose parameters for the next round; deterministic given the records and the seed.

    A task without a search space raises :class:`NoSearchSpace` (one line: the embedded
    scouts propose parameters only)."""
    task = resolve_task(request.task, request.workspace)
    task.require_search_space()
    state = records_for(request.workspace, request.study).snapshot()
    seed = derive_seed(request.seed, "scout", request.strategy, request.round)
    return _STRATEGIES[request.strategy](task, state, seed)
