"""What an auto-research run looks like, derived from its ledger events alone.

Rounds, the incumbent, best-so-far, plateau length and reconsideration points are all
computed here from recorded outcomes, so a notebook opened tomorrow, or on another machine
sharing the ledger, draws exactly the same tables and charts. A round's numbers come from
the trusted adoption node's result (which carries the trusted measure step's evidence),
never from an agent's reply: agents contribute only the proposals, the change's approach,
and the reviewer's verdict and reason. ``ResearchViewBuilder`` is
incremental: a monitor feeds it only the events after its cursor, so a refresh costs the
same whatever the run's length.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from zeroshot_kernel.auto_research.noise_floor import gate_summary
from zeroshot_kernel.contract.outcome import ErrorOutcome, VerifiedOutcome, VerifierOutcome
from zeroshot_kernel.ledger.events import (
    NodeCompleted,
    NodeStarted,
    RunEvent,
    Terminal,
    TerminalResult,
)
from zeroshot_kernel.ledger.reader import RunReader

SELF_SCORED_NOTE = (
    "self-scored: the candidate's own code prints its metric (the task declares "
    "selfScored; no scorer it cannot see checks it)"
)
UNCONTAINED_NOTE = (
    "UNCONTAINED: experiments ran without a box (--sandbox none, or a parameter-only task "
    "where no box could be made)"
)

SCOUTS = {
    "scout_exploration": "exploration",
    "scout_synthesis": "synthesis",
    "scout_challenge": "challenge",
}


@dataclass(frozen=True)
class Proposal:
    strategy: str
    approach: str
    params: dict[str, Any]
    rationale: str


@dataclass(frozen=True)
class RoundView:
    """One reviewed round: what was proposed, tried, measured and decided."""

    round: int
    proposals: tuple[Proposal, ...]
    measure_status: str
    """``measured``, ``change_rejected`` or ``parent_unverified``."""
    parent_id: str
    candidate_id: str
    strategy: str
    approach: str
    params: dict[str, Any]
    experiment_status: str
    metric: float | None
    incumbent_id: str
    incumbent_metric: float | None
    gain: float
    noise_floor: float
    effect_size: float | None
    evidence: str
    disposition: str
    justification: str
    verdict: str
    reason: str
    passes: int
    """Work/review passes the round took (1 + the corrections asked for)."""
    reconsidered: bool
    reconsideration_due: bool
    diff: str = ""
    """The decided change against its parent, as the trusted measure step applied it (a
    unified diff; empty for a change it refused)."""
    contained: bool | None = None
    """Whether the round's experiments ran in a box (``None``: none ran, or not recorded)."""
    self_scored: bool = False
    """The metric came from the candidate's own code (a code task without a scorer)."""
    seeds: int = 0
    """The paired seeds the decided evidence rests on."""
    gate_decision: str | None = None
    """How the gate's race over paired seeds ended (``better``, ``worse``, ``not_better``,
    ``budget_spent``, ``failed``; ``None``: not raced, or recorded before racing)."""
    max_seeds: int | None = None
    """The race's budget of paired seeds."""

    @property
    def gate(self) -> str:
        """The gate's numbers and decision in words: gain, noise floor, seeds, decision."""
        return gate_summary(
            self.gain, self.noise_floor, self.seeds, self.gate_decision, self.max_seeds
        )

    @property
    def adopted(self) -> bool:
        """Trusted adoption moved the incumbent to this round's candidate."""
        return self.disposition == "adopt"


@dataclass(frozen=True)
class Incumbent:
    candidate_id: str
    metric: float | None
    round: int
    """The round that adopted it (0: the starting candidate)."""


@dataclass(frozen=True)
class ResearchView:
    rounds: tuple[RoundView, ...]
    incumbent: Incumbent | None
    best_so_far: tuple[float | None, ...]
    """The incumbent's metric after each round."""
    plateau: int
    """Rounds since the incumbent last improved."""
    reconsiderations: tuple[int, ...]
    """Rounds in which the researcher explicitly reconsidered its approach."""
    active_round: int
    """The round in progress (len(rounds) + 1 while running)."""
    passes_in_progress: int
    """Researcher passes of the round in progress so far."""
    measured_in_progress: int
    """Measure-step passes of the round in progress that completed."""
    review_in_progress: tuple[str, bool]
    """The latest verdict of the round in progress and whether it asked to adopt."""
    terminal: TerminalResult | None
    earlier: int = 0
    """Leading rounds that earlier runs of the study reviewed (a continued run's view
    starts from its study's history); the run's own are ``rounds[earlier:]``."""

    @property
    def run_rounds(self) -> tuple[RoundView, ...]:
        """The rounds this run reviewed."""
        return self.rounds[self.earlier :]

    @property
    def adoptions(self) -> tuple[int, ...]:
        return tuple(r.round for r in self.rounds if r.adopted)

    @property
    def rejections(self) -> tuple[int, ...]:
        return tuple(r.round for r in self.rounds if not r.adopted)

    @property
    def self_scored(self) -> bool:
        """A round's metric came from the candidate's own code."""
        return any(r.self_scored for r in self.rounds)

    @property
    def uncontained(self) -> bool:
        """A round's experiments ran without a box."""
        return any(r.contained is False for r in self.rounds)

    def notes(self) -> list[str]:
        """What every view of the run says about how it was measured, when it must."""
        return [
            *([SELF_SCORED_NOTE] if self.self_scored else []),
            *([UNCONTAINED_NOTE] if self.uncontained else []),
        ]


@dataclass
class ResearchViewBuilder:
    """Folds events into a :class:`ResearchView`; feed it events in cursor order."""

    _nodes: dict[str, str] = field(default_factory=dict)
    _proposals: dict[str, Proposal] = field(default_factory=dict)
    _verdict: tuple[str, str] = ("", "")
    _adopt: bool = False
    _passes: int = 0
    _measured: int = 0
    _diff: str = ""
    _rounds: list[RoundView] = field(default_factory=list)
    _terminal: TerminalResult | None = None
    _earlier: int = 0

    @classmethod
    def after(cls, earlier: Sequence[RoundView]) -> ResearchViewBuilder:
        """A builder for a run that continues a study: its view starts with ``earlier``
        (the rounds the study's earlier runs reviewed)."""
        return cls(_rounds=list(earlier), _earlier=len(earlier))

    def feed(self, events: Iterable[RunEvent]) -> ResearchViewBuilder:
        for event in events:
            if isinstance(event, NodeStarted):
                self._nodes[event.reference.execution] = event.reference.node
            elif isinstance(event, NodeCompleted):
                node = self._nodes.get(event.completion.reference.execution, "")
                self._completed(node, event)
            elif isinstance(event, Terminal):
                self._terminal = event.result
        return self

    def view(self) -> ResearchView:
        incumbent: Incumbent | None = None
        best: list[float | None] = []
        plateau = 0
        for round_view in self._rounds:
            if incumbent is None:
                incumbent = Incumbent(round_view.incumbent_id, round_view.incumbent_metric, 0)
            if round_view.adopted:
                incumbent = Incumbent(round_view.candidate_id, round_view.metric, round_view.round)
                plateau = 0
            else:
                plateau += 1
            best.append(incumbent.metric)
        return ResearchView(
            rounds=tuple(self._rounds),
            incumbent=incumbent,
            best_so_far=tuple(best),
            plateau=plateau,
            reconsiderations=tuple(r.round for r in self._rounds if r.reconsidered),
            active_round=len(self._rounds) + (0 if self._terminal else 1),
            passes_in_progress=self._passes,
            measured_in_progress=self._measured,
            review_in_progress=(self._verdict[0], self._adopt),
            terminal=self._terminal,
            earlier=self._earlier,
        )

    def _completed(self, node: str, event: NodeCompleted) -> None:
        outcome = event.completion.outcome
        if isinstance(outcome, ErrorOutcome):
            return
        if node in SCOUTS and isinstance(outcome, VerifierOutcome):
            proposal = (outcome.output or {}).get("proposal", {})
            self._proposals[SCOUTS[node]] = Proposal(
                strategy=SCOUTS[node],
                approach=str(proposal.get("approach", "")),
                params=_params(proposal.get("paramsJson", "{}")),
                rationale=str(proposal.get("rationale", "")),
            )
        elif node == "researcher" and isinstance(outcome, VerifiedOutcome):
            self._passes += 1
        elif node == "measure" and isinstance(outcome, VerifiedOutcome):
            self._measured += 1
            evidence = (outcome.output or {}).get("evidence") or {}
            self._diff = str(evidence.get("diff", "")) if isinstance(evidence, dict) else ""
        elif node == "reviewer" and isinstance(outcome, VerifierOutcome):
            diagnostic = outcome.diagnostic or {}
            self._verdict = (
                str(outcome.signals.get("verdict", "")),
                str(diagnostic.get("reason", "")),
            )
            self._adopt = diagnostic.get("adopt") is True
        elif node == "adopt" and isinstance(outcome, VerifierOutcome):
            result = (outcome.output or {}).get("result") or {}
            self._rounds.append(self._round(result))
            self._passes = self._measured = 0
            self._verdict, self._adopt, self._diff = ("", ""), False, ""

    def _round(self, result: dict[str, Any]) -> RoundView:
        return RoundView(
            round=int(result.get("round", len(self._rounds) + 1)),
            proposals=tuple(self._proposals[s] for s in SCOUTS.values() if s in self._proposals),
            measure_status=str(result.get("measureStatus", "")),
            parent_id=str(result.get("parentId", "")),
            candidate_id=str(result.get("candidateId", "")),
            strategy=str(result.get("strategy", "")),
            approach=str(result.get("approach", "")),
            params=_params(result.get("paramsJson", "{}")),
            experiment_status=str(result.get("experimentStatus", "")),
            metric=result.get("metric"),
            incumbent_id=str(result.get("incumbentId", "")),
            incumbent_metric=result.get("incumbentMetric"),
            gain=float(result.get("gain", 0.0)),
            noise_floor=float(result.get("noiseFloor", 0.0)),
            effect_size=result.get("effectSize"),
            evidence=str(result.get("evidence", "")),
            disposition=str(result.get("disposition", "")),
            justification=str(result.get("justification", "")),
            verdict=self._verdict[0],
            reason=self._verdict[1],
            passes=self._passes,
            reconsidered=bool(result.get("reconsidered", False)),
            reconsideration_due=bool(result.get("reconsiderationDue", False)),
            diff=self._diff,
            contained=_flag(result.get("contained")),
            self_scored=result.get("selfScored") is True,
            seeds=len(repeats) if isinstance(repeats := result.get("metricRepeats"), list) else 0,
            gate_decision=gate if isinstance(gate := result.get("gateDecision"), str) else None,
            max_seeds=budget
            if isinstance(budget := result.get("maxSeeds"), int) and not isinstance(budget, bool)
            else None,
        )


def research_view(events: Iterable[RunEvent]) -> ResearchView:
    """The view of a run from its events (all of them, in order)."""
    return ResearchViewBuilder().feed(events).view()


def load_research_view(ledger: RunReader, run_id: str) -> ResearchView:
    _, tail = ledger.snapshot_and_tail(run_id, kinds={"node_started", "node_completed", "terminal"})
    return research_view(event for _, event in tail)


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _params(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
