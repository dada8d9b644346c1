"""The studies panel, a study's dashboard, a candidate and a study's CSV, as the JSON of
``labextension/src/types.ts`` (``StudiesReply``, ``StudyDashboard``, ``CandidateDetail``).

Built from the same readers the widgets and the CLI use (``list_studies``, ``study_rows``,
``Study``, ``candidate_detail``, ``parameter_importance``), so every view counts alike:
rounds are reviewed rounds, the baseline (round 0) is not one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from zeroshot_kernel.auto_research.candidate_detail import CandidateDetail, candidate_detail
from zeroshot_kernel.auto_research.experiment import status_words
from zeroshot_kernel.auto_research.importance import (
    Importances,
    MeasuredStudy,
    load_measured,
    parameter_importance,
)
from zeroshot_kernel.auto_research.noise_floor import gate_summary
from zeroshot_kernel.auto_research.records import ResearchRecords
from zeroshot_kernel.auto_research.round_words import (
    approach_words,
    decision_text,
    decision_words,
    plain_words,
)
from zeroshot_kernel.auto_research.studies.catalog import StudyError, list_studies
from zeroshot_kernel.auto_research.studies.export import Study
from zeroshot_kernel.auto_research.studies.table import RunCache, RunRow, StudyRow, study_rows
from zeroshot_kernel.client import Client
from zeroshot_kernel.exceptions import NotFound
from zeroshot_kernel.lab_server.json_values import number

CSV_KINDS = ("rounds", "candidates")
N = TypeVar("N", int, float)


class UnknownStudy(NotFound):
    """No study of that name in the workspace (HTTP 404, naming the ones there are)."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"no study {name!r} in this workspace")
        self.known = known


def studies_reply(client: Client, cache: RunCache | None = None) -> dict[str, Any]:
    """``StudiesReply``: every study, by name (``cache``: rows of finished runs)."""
    recorded = {summary.name: summary for summary in list_studies(client.workspace)}
    updated = {summary.run_id: summary.updated_at for summary in client.runs()}
    rows = []
    for row in study_rows(client, cache=cache):
        latest = row.runs[-1] if row.runs else None
        summary = recorded.get(row.name)
        rows.append(
            {
                "name": row.name,
                "task": row.task,
                "metric": row.metric,
                "direction": row.direction or "minimize",
                # as `zeroshot research studies` counts: the records' reviewed rounds
                "rounds": summary.rounds if summary is not None else row.rounds,
                "adopted": row.adoptions,
                "incumbent": _incumbent(row),
                "latest_run": latest.run_id if latest else None,
                "running": latest is not None and not latest.finished,
                "updated": updated.get(latest.run_id) if latest else None,
            }
        )
    return {"workspace": str(client.workspace), "studies": rows}


def study_names(client: Client) -> list[str]:
    """The studies a 404 names: those with records in the workspace."""
    return [summary.name for summary in list_studies(client.workspace)]


def open_study(client: Client, name: str) -> Study:
    """The study ``name`` (already a valid name); :class:`UnknownStudy` when absent."""
    try:
        return Study.open(client.workspace, name, client=client)
    except StudyError:
        raise UnknownStudy(name, study_names(client)) from None


def study_dashboard(client: Client, name: str, cache: RunCache | None = None) -> dict[str, Any]:
    """``StudyDashboard``: the chart, rounds, candidates, parameters and insights."""
    study = open_study(client, name)
    row = next((r for r in study_rows(client, cache=cache) if r.name == name), None)
    recorded = study.rounds()
    rounds = [round_row(r) for r in recorded]
    measured = load_measured(client.workspace, name)
    importances = parameter_importance(measured)
    usage = candidate_usage(recorded, row.runs if row else [])
    return {
        "name": name,
        "task": row.task if row else measured.task,
        "metric": row.metric if row else measured.metric,
        "direction": (row.direction if row else None) or measured.direction,
        "incumbent": _incumbent(row) if row else None,
        "chart": chart(rounds, earlier=0),
        "rounds": rounds,
        "candidates": [
            {**candidate_row(c), **usage.get(c["candidate_id"], {})} for c in study.candidates()
        ],
        "params": [_param_spec(p) for p in measured.search_space],
        "importance": [
            {"param": param, "importance": weight} for param, weight in importances.items()
        ],
        "runs": [run.run_id for run in row.runs] if row else [],
        "insights": insights(measured, importances),
    }


def round_row(row: dict[str, Any]) -> dict[str, Any]:
    """``RoundRow`` from a row of :meth:`Study.rounds`, in the words of :mod:`.round_words`."""
    words = decision_words(
        str(row["disposition"] or ""),
        str(row["candidate_id"]),
        str(row["parent_id"]),
        str(row["approach"]),
    )
    why = row.get("reason") or gate_summary(
        number(row.get("gain")),
        number(row.get("noise_floor")),
        int(row.get("repeats") or 0),
        row.get("gate_decision"),
        row.get("max_seeds"),
    )
    return {
        "round": row["round"],
        "run_id": row["run_id"] or "",
        "candidate_id": row["candidate_id"],
        "approach": approach_words(
            str(row["approach"]), str(row["candidate_id"]), str(row["parent_id"])
        ),
        "strategy": row["strategy"],
        "params": row["params"],
        "status": status_words(str(row["experiment_status"])),
        "metric": number(row["metric"]),
        "incumbent_id": row["incumbent_id"],
        "incumbent_metric": number(row["incumbent_metric"]),
        "best_so_far": number(row["best_so_far"]),
        "adopted": bool(row["adopted"]),
        "disposition": words,
        "decision": decision_text(words, why),
        "gain": number(row.get("gain")),
        "noise_floor": number(row.get("noise_floor")),
        "seeds": int(row.get("repeats") or 0),
        "gate_decision": row.get("gate_decision"),
        "effect_size": number(row.get("effect_size")),
    }


def chart(rounds: list[dict[str, Any]], *, earlier: int) -> dict[str, Any]:
    """``ChartSeries`` of ``RoundRow`` payloads, oldest first."""
    return {
        "rounds": [r["round"] for r in rounds],
        "values": [r["metric"] if r["status"] == "ok" else None for r in rounds],
        "best_so_far": [r["best_so_far"] for r in rounds],
        "adopted": [r["adopted"] for r in rounds],
        "candidate_ids": [r["candidate_id"] for r in rounds],
        "earlier": earlier,
    }


def candidate_row(row: dict[str, Any]) -> dict[str, Any]:
    """``CandidateRow`` from a row of :meth:`Study.candidates`."""
    return {
        "candidate_id": row["candidate_id"],
        "round": row["round"],
        "run_id": row["run_id"] or "",
        "params": row["params"],
        "metric": number(row["metric_mean"]),
        "status": status_words(str(row["status"])),
        "adopted": bool(row["adopted"]),
        "harness": row["harness"],
        "model": row["model"],
        "cost_usd": None,  # see candidate_usage
        "tokens": None,
        "duration_s": None,
    }


def round_usage(runs: Sequence[RunRow]) -> dict[int, tuple[int | None, float | None]]:
    """``(tokens, cost_usd)`` per study-wide round: what the ledger's usage events (the
    harness's reports on each model call) recorded between the run's previous decision and
    that round's; ``None`` where no call reported it."""
    usage: dict[int, tuple[int | None, float | None]] = {}
    for run in runs:
        tokens: int | None = None
        cost: float | None = None
        for point in run.curve:  # counted from the run's start
            usage[point.round] = (_since(point.tokens, tokens), _since(point.cost_usd, cost))
            tokens, cost = point.tokens, point.cost_usd
    return usage


def candidate_usage(
    rounds: Sequence[dict[str, Any]], runs: Sequence[RunRow]
) -> dict[str, dict[str, Any]]:
    """The ``tokens`` and ``cost_usd`` of each candidate a round built and decided: that
    round's usage (:func:`round_usage`). A re-measured incumbent, a baseline or a candidate
    of a round that decided another one gets none (its calls count in that round's)."""
    per_round = round_usage(runs)
    found: dict[str, dict[str, Any]] = {}
    for row in rounds:
        candidate = str(row["candidate_id"])
        if not candidate or candidate == row["parent_id"] or row["round"] not in per_round:
            continue
        tokens, cost = per_round[row["round"]]
        found.setdefault(candidate, {"tokens": tokens, "cost_usd": number(cost)})
    return found


def _since(now: N | None, before: N | None) -> N | None:
    if now is None:
        return None
    return now - before if before is not None else now


def candidate_payload(client: Client, name: str, candidate: str) -> dict[str, Any]:
    """``CandidateDetail``: the records' view of one candidate, with the reviewer's words."""
    study = open_study(client, name)
    detail = candidate_detail(client.workspace, name, candidate, client=client)
    row = next((c for c in study.candidates() if c["candidate_id"] == candidate), None)
    base = candidate_row(row) if row is not None else _bare_row(detail)
    review = detail.review
    words = (
        "baseline"
        if review is None
        else decision_words(review.decision, detail.candidate_id, detail.parent_id, review.approach)
    )
    return {
        **base,
        "duration_s": sum(m.duration_s for m in detail.measurements) or None,
        "approach": approach_words(review.approach, detail.candidate_id, detail.parent_id)
        if review
        else "the task's starting candidate",
        "strategy": review.strategy if review else "",
        "rationale": review.rationale if review else "",
        "decision": decision_text(words, review.noise_decision) if review else words,
        "review": _review_text(detail),
        "evidence": review.evidence if review else "",
        "diff": detail.diff,
        "seeds": review.seeds if review else len(detail.measurements),
        "gain": number(review.gain) if review else None,
        "noise_floor": number(review.noise_floor) if review else None,
        "gate_decision": review.gate_decision if review else None,
        "curve": _curve(ResearchRecords(client.workspace, name), candidate),
    }


def export_csv(client: Client, name: str, kind: str = "candidates") -> str:
    """The study's rows as CSV, as ``Study.csv_text`` writes them (``rounds``: what the study
    browser's "Export CSV" writes; ``candidates``: one row per candidate, the dashboard's)."""
    return open_study(client, name).csv_text("rounds" if kind == "rounds" else "candidates")


def insights(measured: MeasuredStudy, importances: Importances) -> list[str]:
    """What the insights view says, as sentences."""
    lines = [measured.problem] if measured.problem else []
    if importances:
        top, weight = next(iter(importances.items()))
        lines.append(
            f"{top} mattered most to {measured.metric} ({weight:.0%} of the importance, "
            f"{importances.measured} measured candidates)"
        )
    elif importances.reason:
        lines.append(importances.reason)
    if importances.constant:
        constant = ", ".join(importances.constant)
        lines.append(f"held one value in every measured candidate: {constant}")
    if importances.note:
        lines.append(importances.note)
    best, incumbent = measured.best(), measured.incumbent
    if best is not None and incumbent is not None and best.candidate_id != incumbent.candidate_id:
        lines.append(
            f"the best single measurement is {best.candidate_id} ({best.metric:.4g}); the "
            f"incumbent {incumbent.candidate_id} ({incumbent.metric:.4g}) is the one whose "
            "gain beat the noise floor"
        )
    return lines


def _incumbent(row: StudyRow) -> dict[str, Any] | None:
    if row.incumbent is None:
        return None
    return {
        "candidate_id": row.incumbent.candidate_id,
        "metric": number(row.incumbent.metric),
        "round": row.incumbent.round,
    }


def _param_spec(parameter: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": parameter.name, "kind": parameter.type}
    if parameter.type == "categorical":
        spec["choices"] = list(parameter.choices or [])
    else:
        spec.update(low=parameter.low, high=parameter.high, log=parameter.log)
    return spec


def _bare_row(detail: CandidateDetail) -> dict[str, Any]:
    return {
        "candidate_id": detail.candidate_id,
        "round": detail.round,
        "run_id": "",
        "params": detail.params,
        "metric": number(detail.mean),
        "status": status_words(detail.measurements[0].status) if detail.measurements else "",
        "adopted": False,
        "harness": None,
        "model": None,
        "cost_usd": None,
        "tokens": None,
        "duration_s": None,
    }


def _review_text(detail: CandidateDetail) -> str:
    review = detail.review
    if review is None:
        return "measured as the baseline (no review)"
    parts = [
        f"verdict: {review.verdict}" if review.verdict else "",
        review.reason,
        review.justification,
        *(f"correction: {c}" for c in review.corrections),
    ]
    return plain_words("\n".join(part for part in parts if part))


def _curve(records: ResearchRecords, candidate: str) -> list[dict[str, float]]:
    """The learning curve its first measurement reported (empty when it reported none)."""
    manifest = records.read_manifest(candidate)
    for measurement in manifest.measurements if manifest else []:
        curve = measurement.experiment.curve
        if curve is not None:
            return [{"step": step, "value": value} for step, value in curve.points().items()]
    return []
