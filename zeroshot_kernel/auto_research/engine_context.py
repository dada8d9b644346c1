"""The engine's context for a research node, derived from the run's recorded events.

The round and pass numbers, "reconsideration due" and the study's seed are facts of the run
(the ledger) and of the study (its records), computed in the controller before each call,
never guessed by an agent; a retried execution gets the same ones.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from zeroshot_kernel.auto_research.options import DEFAULT_ITERATIONS
from zeroshot_kernel.auto_research.reconsider import reconsideration_due
from zeroshot_kernel.auto_research.seeds import study_seed
from zeroshot_kernel.auto_research.studies.catalog import check_study_name, records_for, study_of
from zeroshot_kernel.auto_research.studies.run_lock import hold_study
from zeroshot_kernel.auto_research.studies.run_lock import release_run as release_study
from zeroshot_kernel.auto_research.task import resolve_task
from zeroshot_kernel.auto_research.views import ResearchView, ResearchViewBuilder
from zeroshot_kernel.harness.base import ExecutionRequest
from zeroshot_kernel.ledger.events import RunEvent


def research_context(request: ExecutionRequest) -> dict[str, Any]:
    """Rounds are numbered across the study (see ``ResearchRecords.round_offset``); a
    pass is numbered by the researcher executions of its round (``pass``) and the measure
    executions that completed before it (``measured``); ``verdict`` and ``adopt`` are the
    round's latest review, as the ledger recorded it.

    The run's controller holds the study first (:mod:`.studies.run_lock`): a study another
    run is researching, from any ledger, refuses the call before anything is recorded in it."""
    run_input = request.run_input or {}
    study = study_of(run_input)
    with _lock:
        run = _run(request, study, str(run_input.get("task", "")))
        view = run.view(request.events())
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
    return {
        "round": run.offset + view.active_round,
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


def release_run(run_id: str) -> None:
    """Let go of the run's study and forget what its calls kept (its controller ended:
    a controller that takes the run over holds the study again)."""
    with _lock:
        _runs.pop(run_id, None)
    release_study(run_id)


@dataclass
class _Run:
    """One run's research facts in this controller process. The study's hold and the
    run's round offset are taken once, on its first call (they stay until
    :func:`release_run`: checking them again cost every call file system work); the view
    builder is fed only the events since the last call (``request.events()`` only grows,
    and seven calls a round would otherwise fold the whole history every time)."""

    where: tuple[str, str]
    """Workspace and study: a run seen in another of them starts again."""
    offset: int
    builder: ResearchViewBuilder = field(default_factory=ResearchViewBuilder)
    fed: int = 0

    def view(self, events: list[RunEvent]) -> ResearchView:
        if self.fed > len(events):  # not the history this builder saw: start again
            self.fed, self.builder = 0, ResearchViewBuilder()
        self.builder.feed(events[self.fed :])
        self.fed = len(events)
        return self.builder.view()


_runs: dict[str, _Run] = {}
_lock = threading.Lock()
"""Harnesses may compute contexts from threads (a role preparing a turn off the loop)."""


def _run(request: ExecutionRequest, study: str, task: str) -> _Run:
    where = (str(request.workspace), study)
    run = _runs.get(request.run_id)
    if run is None or run.where != where:
        hold_study(request.workspace, check_study_name(study), request.run_id)
        spec = resolve_task(task, request.workspace).spec
        offset = records_for(request.workspace, study).round_offset(request.run_id, task, spec)
        run = _runs[request.run_id] = _Run(where, offset)
    return run


def _seed(run_id: str) -> int:
    return int.from_bytes(run_id.encode()[-6:].ljust(6, b"\0"), "big") % (2**31)
