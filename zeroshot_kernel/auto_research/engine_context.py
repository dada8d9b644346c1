"""The engine's context for a research node, derived from the run's recorded events.

The round and pass numbers, "reconsideration due" and the study's seed are facts of the run
(the ledger) and of the study (its records), computed in the controller before each call,
never guessed by an agent; a retried execution gets the same ones.
"""

from __future__ import annotations

from typing import Any

from zeroshot_kernel.auto_research.reconsider import reconsideration_due
from zeroshot_kernel.auto_research.seeds import study_seed
from zeroshot_kernel.auto_research.studies import check_study_name, records_for, study_of
from zeroshot_kernel.auto_research.study_hold import hold_study
from zeroshot_kernel.auto_research.template import DEFAULT_ITERATIONS
from zeroshot_kernel.auto_research.views import ResearchView, ResearchViewBuilder
from zeroshot_kernel.harness.base import ExecutionRequest


def research_context(request: ExecutionRequest) -> dict[str, Any]:
    """Rounds are numbered across the study (see ``ResearchRecords.round_offset``); a
    pass is numbered by the researcher executions of its round (``pass``) and the measure
    executions that completed before it (``measured``); ``verdict`` and ``adopt`` are the
    round's latest review, as the ledger recorded it.

    The run's controller holds the study first (:mod:`.study_hold`): a study another run is
    researching, from any ledger, refuses the call before anything is recorded in it."""
    run_input = request.run_input or {}
    study = study_of(run_input)
    hold_study(request.workspace, check_study_name(study), request.run_id)
    view = _view(request)
    accepted = [
        {
            "disposition": r.disposition,
            "approach": r.approach,
            "gain": r.gain,
            "reconsidered": r.reconsidered,
        }
        for r in view.rounds
    ]
    options = run_input.get("options") or {}
    iterations = int(options.get("iterations") or DEFAULT_ITERATIONS)
    offset = records_for(request.workspace, study).round_offset(
        request.run_id, str(run_input.get("task", ""))
    )
    return {
        "round": offset + view.active_round,
        "pass": view.passes_in_progress + 1,
        "measured": view.measured_in_progress,
        "verdict": view.review_in_progress[0],
        "adopt": view.review_in_progress[1],
        "iterations": iterations,
        "reconsiderationDue": reconsideration_due(accepted, iterations),
        "seed": _seed(request.run_id),
        "studySeed": study_seed(study),
        "dask": options.get("dask"),
        "parallel": options.get("parallel"),
    }


_builders: dict[str, tuple[int, ResearchViewBuilder]] = {}
"""Per run, how many of its events the cached view builder was fed: the controller's
``request.events()`` only grows, so each call folds in just the new events (seven calls a
round would otherwise fold the whole history every time)."""


def _view(request: ExecutionRequest) -> ResearchView:
    events = request.events()
    fed, builder = _builders.get(request.run_id, (0, ResearchViewBuilder()))
    if fed > len(events):  # not the history this builder saw: start again
        fed, builder = 0, ResearchViewBuilder()
    builder.feed(events[fed:])
    _builders[request.run_id] = (len(events), builder)
    return builder.view()


def _seed(run_id: str) -> int:
    return int.from_bytes(run_id.encode()[-6:].ljust(6, b"\0"), "big") % (2**31)
