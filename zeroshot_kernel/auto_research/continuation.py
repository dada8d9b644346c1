"""Carrying a study on after a stopped run: the options of the run that continues it, the
rounds it starts from, and which run continued which.

Shared by the widget monitor's Continue and the Jupyter server extension's
``POST runs/{id}/continue``, so both submit the same run and count the same rounds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zeroshot_kernel.auto_research.studies.catalog import StudyError, study_of_run
from zeroshot_kernel.auto_research.views import RoundView, load_research_view
from zeroshot_kernel.ledger import RunNotFound
from zeroshot_kernel.templates import TemplateOptions

if TYPE_CHECKING:
    from zeroshot_kernel.client import Client


def continuation_options(
    admitted: dict[str, Any], *, iterations: int | None = None
) -> TemplateOptions:
    """The auto-research template options that continue a run's study: its task, study,
    harness, provider, model and openai server, read from its admitted input and plan
    (``iterations``: the new run's rounds; default the old run's)."""
    given = admitted.get("initialInput") or {}
    runtime = admitted.get("runtime") or {}
    if not isinstance(given, dict) or not given.get("task"):
        raise ValueError("not an auto-research run (its input names no task)")
    connection = (runtime.get("connections") or {}).get("openai") or {}
    return TemplateOptions(
        task=str(given["task"]),
        study=str(given.get("study") or "") or None,
        iterations=iterations or (given.get("options") or {}).get("iterations"),
        harness=str(runtime.get("harness") or "local"),
        provider=runtime.get("provider"),
        model=runtime.get("model"),
        base_url=connection.get("baseUrl"),
        max_tokens=runtime.get("maxTokens"),
    )


def study_history(client: Client, run_id: str) -> tuple[RoundView, ...]:
    """The rounds that the earlier runs of ``run_id``'s study in this ledger reviewed,
    oldest first: a monitor starts from them, so a continued study shows its whole chart,
    incumbent and count (none for a run that is not auto-research)."""
    return tuple(r for _, rounds in study_history_by_run(client, run_id) for r in rounds)


def study_history_by_run(client: Client, run_id: str) -> list[tuple[str, tuple[RoundView, ...]]]:
    """:func:`study_history`, run by run: each earlier run of the study with its rounds,
    oldest first (a view that names each round's run)."""
    try:
        study = study_of_run(client, run_id)
    except (StudyError, RunNotFound):
        return []
    runs: list[tuple[str, tuple[RoundView, ...]]] = []
    for run in sorted(client.runs(), key=lambda summary: summary.created_at):
        if run.run_id == run_id:
            break
        try:
            if study_of_run(client, run.run_id) == study:
                runs.append((run.run_id, load_research_view(client, run.run_id).rounds))
        except (StudyError, RunNotFound):
            continue
    return runs


def continued_by(client: Client, run_id: str) -> str | None:
    """The run that continued ``run_id``'s study: the newest auto-research run of the same
    study submitted after it (None: nothing did, or ``run_id`` is not auto-research), so a
    view reopened on a stopped run follows the study to its newest run."""
    try:
        study = study_of_run(client, run_id)
    except (StudyError, RunNotFound):
        return None
    newest_first = sorted(client.runs(), key=lambda summary: summary.created_at, reverse=True)
    for run in newest_first:
        if run.run_id == run_id:
            return None
        try:
            if study_of_run(client, run.run_id) == study:
                return run.run_id
        except (StudyError, RunNotFound):
            continue
    return None
