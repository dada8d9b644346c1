"""The studies of a workspace and their runs in a ledger, as rows for a table or a chart.

One :class:`StudyRow` per study (with its runs as :class:`RunRow`), built from the study
records on disk and the ledger's runs: what each run researched, on which harness and
model, how it ended, its rounds and adoptions, its model calls and the usage its harness
reported, and the best-so-far curve against measured candidates and model cost. Each run's
events are read once (finished runs are remembered by a :class:`RunCache`), so refreshing a
table over a ledger with many runs costs only the runs still going.

Example::

    from zeroshot_kernel.auto_research.studies.table import filter_rows, sort_rows, study_rows
    from zeroshot_kernel.client import Client

    rows = sort_rows(study_rows(Client()), "best")
    for row in filter_rows(rows, "branin"):
        print(row.name, row.harness_model, row.best, row.rounds, row.cost_label)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from zeroshot_kernel.auto_research.studies.catalog import (
    candidates_in_flight,
    in_flight_text,
    list_studies,
    round_in_progress,
    study_of,
    study_round_offset,
)
from zeroshot_kernel.auto_research.task import TaskError, resolve_task
from zeroshot_kernel.auto_research.views import ResearchViewBuilder
from zeroshot_kernel.contract.outcome import VerifierOutcome
from zeroshot_kernel.harness.conversation import add_usage
from zeroshot_kernel.ledger.events import NodeCompleted, NodeStarted, RunEvent, Usage, was_stopped
from zeroshot_kernel.sandbox import UNCONTAINED

if TYPE_CHECKING:
    from zeroshot_kernel.client import Client
    from zeroshot_kernel.ledger import RunSummary

COLUMNS = (
    "study",
    "task",
    "harness",
    "status",
    "best",
    "rounds",
    "adoptions",
    "calls",
    "cost",
    "started",
    "duration",
)
"""The table's columns, in order; each is a key of :func:`sort_rows`."""
MAX_RUNS = 2000
"""Runs read per table (the most recent): a ledger with more still opens at once."""
N = TypeVar("N", int, float)
_EVENT_KINDS = {"node_started", "node_completed", "terminal"}


@dataclass(frozen=True)
class CurvePoint:
    """The incumbent's metric after a round, with what had been spent to get there."""

    round: int
    evaluations: int
    """Candidates measured so far (rounds whose change was built and measured)."""
    model_calls: int
    tokens: int | None
    """Input + output tokens reported so far (None while no harness reported any)."""
    cost_usd: float | None
    best: float | None


@dataclass(frozen=True)
class RunRow:
    """One auto-research run in the ledger."""

    run_id: str
    study: str
    task: str
    harness: str
    model: str
    status: str
    """``running`` (or ``admitted``/``stopping``), ``succeeded``, ``stopped`` (someone
    stopped it) or ``failed: <reason>``."""
    finished: bool
    best: float | None
    rounds: int
    adoptions: int
    model_calls: int
    """Executions of the nodes bound to agents (embedded agents count too)."""
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    started: datetime
    duration_s: float
    curve: tuple[CurvePoint, ...]
    """Per decided round, with usage counted from the run's start."""
    start_metric: float | None
    """The incumbent's metric the run started from."""
    uncontained: bool = False
    """Its experiments ran without a box (``--sandbox none``, or a round recorded so)."""
    in_flight: tuple[str, ...] = ()
    """The approaches of the candidates it is measuring now (several with ``--parallel``)."""

    @property
    def tokens(self) -> int | None:
        return _add(self.input_tokens, self.output_tokens)

    @property
    def status_label(self) -> str:
        """Its status, with the candidates it measures at once, marked ``UNCONTAINED`` when
        its experiments ran without a box."""
        label = self.status + in_flight_text(self.in_flight)
        return f"{label} · {UNCONTAINED}" if self.uncontained else label


@dataclass(frozen=True)
class Incumbent:
    candidate_id: str
    metric: float | None
    round: int
    """The round that adopted it (0: the starting candidate)."""
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StudyRow:
    """One study: its records' summary and its runs in this ledger, oldest first."""

    name: str
    task: str
    metric: str
    direction: Literal["minimize", "maximize"] | None
    runs: tuple[RunRow, ...]
    best: float | None
    incumbent: Incumbent | None
    candidates: int
    rounds: int
    """Decided rounds of its runs in this ledger (else the rounds its records hold)."""
    problem: str | None = None
    self_scored: bool = False
    """Its task is a code task whose candidate prints its own metric (no scorer)."""

    @property
    def task_label(self) -> str:
        """The task's folder name, marked ``self-scored`` when the candidate scores itself."""
        name = self.task.rsplit("/", 1)[-1] or "-"
        return f"{name} (self-scored)" if self.self_scored else name

    @property
    def harnesses(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f"{r.harness}/{r.model}" for r in self.runs))

    @property
    def harness_model(self) -> str:
        """``local/default``, or every pair its runs used, comma-separated."""
        return ", ".join(self.harnesses) or "-"

    @property
    def status(self) -> str:
        """Its latest run's status (``no runs`` when this ledger has none)."""
        return self.runs[-1].status if self.runs else "no runs"

    @property
    def adoptions(self) -> int:
        return sum(r.adoptions for r in self.runs)

    @property
    def model_calls(self) -> int:
        return sum(r.model_calls for r in self.runs)

    @property
    def input_tokens(self) -> int | None:
        return _total(r.input_tokens for r in self.runs)

    @property
    def output_tokens(self) -> int | None:
        return _total(r.output_tokens for r in self.runs)

    @property
    def tokens(self) -> int | None:
        return _total(r.tokens for r in self.runs)

    @property
    def cost_usd(self) -> float | None:
        """Money, summed over the runs whose harness reported it (None: none did)."""
        costs = [r.cost_usd for r in self.runs if r.cost_usd is not None]
        return sum(costs) if costs else None

    @property
    def cost_label(self) -> str:
        """``12,345 tokens, $0.0420``, or ``-`` when no harness reported usage."""
        parts = []
        if self.tokens is not None:
            parts.append(f"{self.tokens:,} tokens")
        if self.cost_usd is not None:
            parts.append(f"${self.cost_usd:.4f}")
        return ", ".join(parts) or "-"

    @property
    def started(self) -> datetime | None:
        return self.runs[0].started if self.runs else None

    @property
    def duration_s(self) -> float:
        return sum(r.duration_s for r in self.runs)

    @property
    def direction_label(self) -> str:
        return {"minimize": "lower is better", "maximize": "higher is better"}.get(
            self.direction or "", "direction unknown"
        )

    @property
    def curve(self) -> tuple[CurvePoint, ...]:
        """Best so far over the study's runs in this ledger, in order, with evaluations and
        usage added up across them; the first point (round 0) is where the first run
        started."""
        if not self.runs:
            return ()
        first = self.runs[0]
        first_round = first.curve[0].round - 1 if first.curve else 0
        points = [CurvePoint(first_round, 0, 0, None, None, first.start_metric)]
        evaluations, calls, tokens, cost = 0, 0, None, None
        for run in self.runs:
            for point in run.curve:
                points.append(
                    CurvePoint(
                        point.round,
                        evaluations + point.evaluations,
                        calls + point.model_calls,
                        _add(tokens, point.tokens),
                        _add(cost, point.cost_usd),
                        point.best,
                    )
                )
            evaluations += run.curve[-1].evaluations if run.curve else 0
            calls += run.model_calls
            tokens, cost = _add(tokens, run.tokens), _add(cost, run.cost_usd)
        return tuple(points)


class RunCache:
    """Rows of finished runs by id: a finished run never changes, so it is read once."""

    def __init__(self) -> None:
        self._rows: dict[str, RunRow | None] = {}

    def get(self, run_id: str) -> tuple[bool, RunRow | None]:
        return (run_id in self._rows), self._rows.get(run_id)

    def put(self, run_id: str, row: RunRow | None, final: bool) -> None:
        if final:
            self._rows[run_id] = row


def study_rows(
    client: Client,
    *,
    cache: RunCache | None = None,
    max_runs: int = MAX_RUNS,
    now: datetime | None = None,
) -> list[StudyRow]:
    """Every study of the client's workspace, and every study its ledger's auto-research
    runs name (a shared ledger may hold runs whose records live in another workspace: their
    row has the ledger's facts only), by name."""
    cache = cache or RunCache()
    now = now or datetime.now(UTC)
    summaries = sorted(client.runs(), key=lambda s: s.created_at)[-max_runs:]
    runs: dict[str, list[RunRow]] = {}
    for summary in summaries:
        known, row = cache.get(summary.run_id)
        if not known:
            row = run_row(client, summary, now=now)
            cache.put(summary.run_id, row, summary.terminal is not None)
        if row is not None:
            runs.setdefault(row.study, []).append(row)
    recorded = {s.name: s for s in list_studies(client.workspace)}
    rows = []
    for name in sorted(set(recorded) | set(runs)):
        rows.append(_study_row(client.workspace, name, recorded.get(name), runs.get(name, [])))
    return rows


def run_row(client: Client, summary: RunSummary, *, now: datetime | None = None) -> RunRow | None:
    """The row of one run (None when it is not an auto-research run); reads its events
    once."""
    admitted = client.ledger.admitted(summary.run_id)
    run_input = admitted.get("initialInput")
    if not (isinstance(run_input, Mapping) and "task" in run_input and "reviewTitle" in run_input):
        return None
    runtime = admitted.get("runtime") or {}
    nodes = runtime.get("nodes") or {}
    agents = {
        name for name, b in nodes.items() if isinstance(b, Mapping) and b.get("kind") == "agent"
    }
    harness, model = harness_and_model(admitted)
    _, tail = client.ledger.snapshot_and_tail(summary.run_id, kinds=_EVENT_KINDS)
    fold = _Fold(agents)
    fold.feed(event for _, event in tail)
    view = fold.builder.view()
    end = summary.updated_at if summary.terminal is not None else (now or datetime.now(UTC))
    curve, evaluations = [], 0
    for round_view, best, (calls, usage) in zip(
        view.rounds, view.best_so_far, fold.at_rounds, strict=False
    ):
        evaluations += round_view.measure_status == "measured"
        curve.append(
            CurvePoint(
                round_view.round,
                evaluations,
                calls,
                _tokens(usage),
                usage.cost_usd if usage else None,
                best,
            )
        )
    usage = fold.usage
    return RunRow(
        run_id=summary.run_id,
        study=study_of(run_input),
        task=str(run_input["task"]),
        harness=harness,
        model=model,
        status=_status(summary),
        finished=summary.terminal is not None,
        best=view.incumbent.metric if view.incumbent else None,
        rounds=len(view.rounds),
        adoptions=len(view.adoptions),
        model_calls=fold.calls,
        input_tokens=usage.input_tokens if usage else None,
        output_tokens=usage.output_tokens if usage else None,
        cost_usd=usage.cost_usd if usage else None,
        started=summary.created_at,
        duration_s=max(0.0, (_aware(end) - _aware(summary.created_at)).total_seconds()),
        curve=tuple(curve),
        start_metric=view.rounds[0].incumbent_metric if view.rounds else None,
        uncontained=runtime.get("sandbox") == "none" or view.uncontained,
        in_flight=()
        if summary.terminal is not None
        else tuple(
            candidates_in_flight(
                client,
                client.workspace,
                summary.run_id,
                round_in_progress(
                    view, study_round_offset(client, client.workspace, summary.run_id)
                ),
            )
        ),
    )


def harness_and_model(admitted: Mapping[str, Any]) -> tuple[str, str]:
    """The harness and model an admitted auto-research run's researcher used (``default``:
    the harness's own default model)."""
    runtime = admitted.get("runtime") or {}
    nodes = runtime.get("nodes") or {}
    found = nodes.get("researcher")
    researcher: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    harness = str(researcher.get("harness") or runtime.get("harness") or "?")
    model = str(researcher.get("model") or runtime.get("model") or "default")
    return harness, model


def sort_rows(rows: Sequence[StudyRow], column: str, *, descending: bool = False) -> list[StudyRow]:
    """``rows`` ordered by one of :data:`COLUMNS` (``best`` orders by each study's own
    direction: better first; rows without a value go last either way)."""
    if column not in COLUMNS:
        raise ValueError(f"no column {column!r}; choose one of {', '.join(COLUMNS)}")
    present = [r for r in rows if _key(r, column) is not None]
    missing = [r for r in rows if _key(r, column) is None]
    ordered = sorted(present, key=lambda r: (_key(r, column), r.name), reverse=descending)
    return ordered + sorted(missing, key=lambda r: r.name)


def filter_rows(rows: Iterable[StudyRow], text: str) -> list[StudyRow]:
    """The rows whose study, task, harness/model or status contains every word of
    ``text`` (case-insensitive); all rows for an empty filter."""
    words = text.lower().split()
    return [r for r in rows if all(w in _haystack(r) for w in words)]


def format_duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 03 min``."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def format_metric(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


class _Fold:
    """One pass over a run's events: the research view, agent executions, and the usage
    reported up to each decided round."""

    def __init__(self, agents: set[str]) -> None:
        self.builder = ResearchViewBuilder()
        self.agents = agents
        self.nodes: dict[str, str] = {}
        self.calls = 0
        self.usage: Usage | None = None
        self.at_rounds: list[tuple[int, Usage | None]] = []

    def feed(self, events: Iterable[RunEvent]) -> None:
        for event in events:
            self.builder.feed((event,))
            if isinstance(event, NodeStarted):
                self.nodes[event.reference.execution] = event.reference.node
            elif isinstance(event, NodeCompleted):
                node = self.nodes.get(event.completion.reference.execution, "")
                self.usage = add_usage(self.usage, event.usage)
                if node in self.agents:
                    self.calls += 1
                outcome = event.completion.outcome
                if node == "adopt" and isinstance(outcome, VerifierOutcome):
                    self.at_rounds.append((self.calls, self.usage))


def _study_row(workspace: Path, name: str, recorded: Any, runs: list[RunRow]) -> StudyRow:
    from zeroshot_kernel.auto_research.records import ResearchRecords

    task = (
        recorded.task if recorded is not None and recorded.task else runs[-1].task if runs else ""
    )
    metric, direction, self_scored = _task_metric(task, workspace)
    incumbent = None
    problem = recorded.problem if recorded is not None else None
    if recorded is not None and recorded.incumbent_id is not None:
        records = ResearchRecords(workspace, name)
        try:
            read = records.read_incumbent()
            manifest = records.read_manifest(recorded.incumbent_id)
        except (OSError, ValueError) as damaged:
            read = manifest = None
            problem = f"unreadable records: {type(damaged).__name__}"
        if read is not None:
            incumbent = Incumbent(
                read.candidate_id,
                read.metric,
                read.adopted_round,
                dict(manifest.params) if manifest else {},
            )
    if incumbent is None and runs and runs[-1].curve:
        last = runs[-1]
        adopted = [p for p in last.curve if p.best == last.best]
        incumbent = Incumbent("?", last.best, adopted[0].round if adopted else 0)
    best = incumbent.metric if incumbent is not None else None
    rounds = sum(r.rounds for r in runs) if runs else _recorded_rounds(workspace, name)
    candidates = recorded.candidates if recorded is not None else 0
    return StudyRow(
        name=name,
        task=task,
        metric=metric,
        direction=direction,
        runs=tuple(sorted(runs, key=lambda r: r.started)),
        best=best,
        incumbent=incumbent,
        candidates=candidates,
        rounds=rounds,
        problem=problem,
        self_scored=self_scored,
    )


def _recorded_rounds(workspace: Path, name: str) -> int:
    """Rounds a study recorded (the baseline, round 0, is not one)."""
    from zeroshot_kernel.auto_research.records import ResearchRecords

    rounds = ResearchRecords(workspace, name).root / "rounds"
    return sum(1 for p in rounds.glob("*.json") if p.stem.isdigit() and int(p.stem) >= 1)


def _task_metric(
    task: str, workspace: Path
) -> tuple[str, Literal["minimize", "maximize"] | None, bool]:
    """The task's metric, its direction and whether its candidate scores itself."""
    if not task:
        return "metric", None, False
    try:
        spec = resolve_task(task, workspace).spec
    except (TaskError, OSError, ValueError):
        return "metric", None, False
    return spec.metric, spec.direction, spec.scored_by_candidate


def _status(summary: RunSummary) -> str:
    terminal = summary.terminal
    if terminal is None:
        return str(summary.phase)
    if was_stopped(terminal):
        return "stopped"
    reason = getattr(terminal, "reason", None)
    return f"{terminal.status}: {reason}" if reason else terminal.status


def _key(row: StudyRow, column: str) -> Any:
    if column == "study":
        return row.name.lower()
    if column == "task":
        return Path(row.task).name.lower() if row.task else None
    if column == "harness":
        return row.harness_model.lower()
    if column == "status":
        return row.status
    if column == "best":
        if row.best is None or math.isnan(row.best):
            return None
        return -row.best if row.direction == "maximize" else row.best
    if column == "cost":
        return row.cost_usd if row.cost_usd is not None else row.tokens
    if column == "calls":
        return row.model_calls
    if column == "started":
        return row.started
    if column == "duration":
        return row.duration_s if row.runs else None
    return getattr(row, column)


def _haystack(row: StudyRow) -> str:
    return " ".join(
        (
            row.name,
            row.task_label,
            row.harness_model,
            row.status,
            *(r.status_label for r in row.runs),
            *(r.run_id for r in row.runs),
        )
    ).lower()


def _tokens(usage: Usage | None) -> int | None:
    return None if usage is None else _add(usage.input_tokens, usage.output_tokens)


def _add(a: N | None, b: N | None) -> N | None:
    if a is None:
        return b
    return a if b is None else a + b


def _total(values: Iterable[N | None]) -> N | None:
    total: N | None = None
    for value in values:
        total = _add(total, value)
    return total


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


__all__ = [
    "COLUMNS",
    "CurvePoint",
    "Incumbent",
    "RunCache",
    "RunRow",
    "StudyRow",
    "filter_rows",
    "format_duration",
    "format_metric",
    "harness_and_model",
    "run_row",
    "sort_rows",
    "study_rows",
]
