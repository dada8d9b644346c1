"""The runs table and one run's live state, as the JSON of ``labextension/src/types.ts``
(``RunsReply``, ``RunState``).

A run's state is read the way the widget monitor reads it: a :class:`RunFeed` cursor (each
poll costs only the new events) that starts from the rounds the study's earlier runs
reviewed, the same :class:`RunInfo`, and the same words (:mod:`.run_words`), so the Lab
view and the widget say the same thing. Feeds are kept per run between requests.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zeroshot_kernel.auto_research.continuation import continued_by, study_history_by_run
from zeroshot_kernel.auto_research.experiment import status_words
from zeroshot_kernel.auto_research.noise_floor import gate_summary
from zeroshot_kernel.auto_research.round_words import approach_words, decision_text
from zeroshot_kernel.auto_research.run_feed import Poll, RunFeed
from zeroshot_kernel.auto_research.run_info import RunInfo
from zeroshot_kernel.auto_research.run_words import (
    phase_key,
    plateau_text,
    progress_text,
    round_disposition,
    study_progress,
    terminal_key,
)
from zeroshot_kernel.auto_research.studies.catalog import (
    StudyError,
    candidates_in_flight,
    in_flight_text,
    round_in_progress,
    study_of_run,
    study_round_offset,
)
from zeroshot_kernel.auto_research.task import TaskError, resolve_task
from zeroshot_kernel.auto_research.views import ResearchView, RoundView
from zeroshot_kernel.client import Client
from zeroshot_kernel.lab_server.json_values import number
from zeroshot_kernel.lab_server.study_payloads import chart
from zeroshot_kernel.ledger import RunNotFound, RunSummary
from zeroshot_kernel.ledger.events import FailedResult, was_stopped
from zeroshot_kernel.ledger.failure import explain_failure

MAX_ROUNDS = 200
"""A run state lists at most the newest rounds (its chart has them all)."""
MAX_FEEDS = 64
"""Runs followed at once; the least recently read is dropped (and re-read if asked)."""


@dataclass
class _Followed:
    """One run followed between requests (its lock serialises polls of its feed)."""

    info: RunInfo
    feed: RunFeed
    offset: int
    earlier_runs: tuple[str, ...]
    """The run of each of the study's earlier rounds the view starts with."""
    study: str | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    cause: str | None = None


class RunStates:
    """The runs that the front end follows, by workspace and run id."""

    def __init__(self) -> None:
        self._followed: OrderedDict[tuple[Path, str], _Followed] = OrderedDict()
        self._lock = threading.Lock()

    def state(self, client: Client, run_id: str) -> dict[str, Any]:
        """``RunState`` now (``RunNotFound`` for a run the ledger does not have)."""
        followed = self._follow(client, run_id)
        with followed.lock:
            poll = followed.feed.poll()
            return run_state(client, run_id, followed, poll)

    def _follow(self, client: Client, run_id: str) -> _Followed:
        key = (Path(client.workspace), run_id)
        with self._lock:
            found = self._followed.get(key)
            if found is not None:
                self._followed.move_to_end(key)
                return found
        info = RunInfo.load(client, run_id, client.workspace)  # RunNotFound first
        history = study_history_by_run(client, run_id)
        earlier = [r for _, rounds in history for r in rounds]
        try:
            study: str | None = study_of_run(client, run_id)
        except StudyError:
            study = None
        followed = _Followed(
            info=info,
            feed=RunFeed(client, run_id, earlier=earlier),
            offset=study_round_offset(client, client.workspace, run_id),
            earlier_runs=tuple(run for run, rounds in history for _ in rounds),
            study=study,
        )
        with self._lock:
            followed = self._followed.setdefault(key, followed)
            while len(self._followed) > MAX_FEEDS:
                self._followed.popitem(last=False)
        return followed


def run_state(client: Client, run_id: str, followed: _Followed, poll: Poll) -> dict[str, Any]:
    info, view = followed.info, followed.feed.view
    research = info.round_limit is not None
    live = poll.terminal is None
    done, limit = study_progress(view, info.round_limit, followed.offset)
    active = round_in_progress(view, followed.offset) if research and live else None
    in_flight = (
        candidates_in_flight(client, client.workspace, run_id, active) if active is not None else []
    )
    after = continued_by(client, run_id) if research else None
    rounds = round_rows(view, followed.earlier_runs, run_id)
    incumbent = view.incumbent
    return {
        "run_id": run_id,
        "workspace": str(client.workspace),
        "title": info.title or run_id,
        "template": template_of(client, run_id),
        "study": followed.study,
        "metric": info.metric if research else None,
        "direction": _direction(info.task, client.workspace) if research else None,
        "phase": phase_key(poll),
        "is_research": research,
        "rounds_done": done,
        "rounds_total": limit,
        "round_in_progress": active,
        "in_flight": in_flight,
        "progress_text": progress_text(view, info.round_limit, active or 0, followed.offset)
        + in_flight_text(in_flight)
        if research
        else phase_key(poll),
        "incumbent": None
        if incumbent is None
        else {
            "candidate_id": incumbent.candidate_id,
            "metric": number(incumbent.metric),
            "round": incumbent.round,
        },
        "plateau_text": plateau_text(view),
        "chart": chart(rounds, earlier=view.earlier),
        "rounds": rounds[-MAX_ROUNDS:],
        "cause": _cause(client, run_id, followed, poll),
        "log_tail": followed.feed.log_tail(),
        "can_stop": live,
        "can_continue": research and was_stopped(poll.terminal) and after is None,
        "continued_by": after,
    }


def round_rows(
    view: ResearchView, earlier_runs: tuple[str, ...], run_id: str
) -> list[dict[str, Any]]:
    """``RoundRow`` of each round of ``view``, oldest first; ``earlier_runs`` names the run
    of each of its leading (earlier) rounds."""
    return [
        round_view_row(
            r,
            earlier_runs[index] if index < len(earlier_runs) else run_id,
            view.best_so_far[index],
        )
        for index, r in enumerate(view.rounds)
    ]


def round_view_row(r: RoundView, run_id: str, best: float | None) -> dict[str, Any]:
    """``RoundRow`` of one reviewed round as the ledger recorded it, in the words of
    :mod:`.round_words` (the decision said once, never ``challenge:remeasure``)."""
    words = round_disposition(r)
    why = (
        r.reason
        or r.justification
        or gate_summary(r.gain, r.noise_floor, r.seeds, r.gate_decision, r.max_seeds)
    )
    return {
        "round": r.round,
        "run_id": run_id,
        "candidate_id": r.candidate_id,
        "approach": approach_words(r.approach, r.candidate_id, r.parent_id),
        "strategy": r.strategy,
        "params": r.params,
        "status": status_words(r.experiment_status),
        "metric": number(r.metric),
        "incumbent_id": r.incumbent_id,
        "incumbent_metric": number(r.incumbent_metric),
        "best_so_far": number(best),
        "adopted": r.adopted,
        "disposition": words,
        "decision": decision_text(words, why),
        "gain": number(r.gain),
        "noise_floor": number(r.noise_floor),
        "seeds": r.seeds,
        "gate_decision": r.gate_decision,
        "effect_size": number(r.effect_size),
    }


def runs_reply(client: Client) -> dict[str, Any]:
    """``RunsReply``: every run of the ledger, newest first."""
    summaries = sorted(client.runs(), key=lambda s: s.created_at, reverse=True)
    return {"workspace": str(client.workspace), "runs": [run_row(client, s) for s in summaries]}


def run_row(client: Client, summary: RunSummary) -> dict[str, Any]:
    try:
        study: str | None = study_of_run(client, summary.run_id)
    except (StudyError, RunNotFound):
        study = None
    return {
        "run_id": summary.run_id,
        "title": summary.title or summary.run_id,
        "template": template_of(client, summary.run_id),
        "study": study,
        "phase": terminal_key(summary.terminal) or summary.phase,
        "created": summary.created_at,
        "ended": summary.updated_at if summary.terminal is not None else None,
    }


def template_of(client: Client, run_id: str) -> str | None:
    """``auto-research``, ``software-change`` or None (a caller's own graph), from what
    the run was admitted with."""
    from zeroshot_kernel.software_change.review.ledger import GATE_WORKER, workers

    try:
        study_of_run(client, run_id)
        return "auto-research"
    except StudyError:
        pass
    graph = client.admitted(run_id).get("graph") or {}
    root = graph.get("root") if isinstance(graph, dict) else None
    if isinstance(root, dict) and any(ref == GATE_WORKER for _, ref in workers(root)):
        return "software-change"
    return None


def _direction(task: str, workspace: Path) -> str | None:
    try:
        return resolve_task(task, workspace).spec.direction if task else None
    except (TaskError, OSError, ValueError):
        return None


def _cause(client: Client, run_id: str, followed: _Followed, poll: Poll) -> str | None:
    """Why a failed run failed (the failing node, its error, the worker's last lines),
    read once, when it has ended; None for a run that did not fail (a stop is no failure)."""
    if not isinstance(poll.terminal, FailedResult) or was_stopped(poll.terminal):
        return None
    if followed.cause is None:
        cause = explain_failure(event for _, event in client.run(run_id).events())
        followed.cause = (
            "\n".join(cause.lines()) if cause is not None else f"failed: {poll.terminal.reason}"
        )
    return followed.cause
