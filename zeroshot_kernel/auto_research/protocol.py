"""The typed payloads of an auto-research round: the agents' (scouts, researcher,
reviewer) and the trusted steps' (the measure step's evidence, the adoption's result).

They are the payloads the auto-research graph passes between nodes, so they follow the
contract's rules: camelCase on the wire, unknown fields rejected, and no ``null``: a field
without a value (``metric`` of a crashed run) is left out of :meth:`ResearchModel.to_wire`.
Parameters are a dict in Python and JSON text (``paramsJson``) on the wire, because the
contract's records have fixed fields while parameter names belong to the task.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PlainSerializer

from zeroshot_kernel.auto_research.task import Params
from zeroshot_kernel.contract.model import ContractModel

Strategy = Literal["exploration", "synthesis", "challenge"]
Origin = Literal["baseline", "exploration", "synthesis", "challenge"]
Disposition = Literal["adopt", "reject", "stop"]
VerdictLabel = Literal["accepted", "corrections", "stop_approved"]
MeasurementKind = Literal["standard", "discriminating"]
MeasureStatus = Literal["measured", "change_rejected", "parent_unverified"]
GateDecision = Literal["better", "worse", "not_better", "undecided", "budget_spent", "failed"]
"""How the gate's race over paired seeds ended (``auto_research.noise_floor``): the gain beat
the noise floor, the candidate was worse beyond it, no better on average, still undecided,
undecided with its budget of seeds spent, or stopped by a failed run."""

STRATEGIES: tuple[Strategy, ...] = ("exploration", "synthesis", "challenge")
REMEASURE = "challenge:remeasure"
"""The approach of a proposal that asks for more measurements of the incumbent itself."""

Round = Annotated[int, Field(ge=0, le=100_000)]
Seed = Annotated[int, Field(ge=0, le=2**53 - 1)]


def _params_from_text(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise ValueError(f"paramsJson is not JSON: {exc}") from exc


ParamsJson = Annotated[
    Params,
    BeforeValidator(_params_from_text),
    PlainSerializer(lambda params: json.dumps(params, sort_keys=True), return_type=str),
    Field(alias="paramsJson"),
]
"""Parameters: a dict in Python, JSON text under ``paramsJson`` on the wire."""


class ResearchModel(ContractModel):
    """A research payload: absent optional values are omitted on the wire, never null."""

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ScoutInput(ResearchModel):
    task: str
    """The task folder; a relative path is inside the workspace."""
    study: str
    """The study whose records this call reads (and the researcher writes)."""
    workspace: str
    round: Annotated[int, Field(ge=1)]
    strategy: Strategy
    seed: Seed = 0


class ScoutProposal(ResearchModel):
    strategy: Strategy
    approach: Annotated[str, Field(min_length=1)]
    params: ParamsJson
    rationale: str


class ResearcherInput(ResearchModel):
    task: str
    study: str
    workspace: str
    round: Annotated[int, Field(ge=1)]
    proposals: Annotated[list[ScoutProposal], Field(min_length=1)]
    corrections: str = ""
    """The reviewer's corrections for this same round; empty for a new round."""
    reconsideration_due: bool = False
    seed: Seed = 0


MAX_PATH_CHARS = 256


class Edit(ResearchModel):
    """One file edit of a change, relative to ``candidate/``: the whole new ``contents``,
    a unified ``diff`` of that one file, or ``delete``."""

    path: Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS)]
    kind: Literal["contents", "diff", "delete"]
    text: str = ""


class Change(ResearchModel):
    """What the researcher proposes: a parent and what to change in it. It carries no
    numbers about itself: the trusted measure step builds, hashes and measures it."""

    parent_id: str
    strategy: Strategy
    approach: Annotated[str, Field(min_length=1)]
    rationale: str
    params: ParamsJson = Field(default_factory=dict)
    """Parameter values to set (a subset of the task's search space); ``{}``: none."""
    edits: list[Edit] = Field(default_factory=list)
    measurement: MeasurementKind = "standard"
    """``discriminating``: twice the task's repeats, for the candidate and the incumbent, and
    twice the racing budget (``maxSeeds``)."""
    reconsidered: bool = False
    """Whether this change reconsiders (a new mechanism, an archived parent, more repeats)."""


ResultStatus = Literal[
    "ok", "crashed", "timed_out", "no_metric", "resource_limit", "pruned", "not_run"
]
"""How a round's candidate fared: an experiment status, or ``not_run``."""


class Evidence(ResearchModel):
    """The trusted measure step's account of one change: what was built, on which paired
    seeds it and the incumbent were measured, and what the measurements show."""

    round: Round
    pass_number: Annotated[int, Field(ge=1)]
    status: MeasureStatus
    parent_id: str
    candidate_id: str
    """The measured candidate (``""`` when the change was rejected)."""
    candidate_sha256: str
    incumbent_id: str
    """The incumbent before this round."""
    measurement: MeasurementKind
    experiment_status: ResultStatus
    seeds: list[int]
    """The paired seeds, in order; ``metricRepeats`` and ``incumbentRepeats`` follow them."""
    metric_repeats: list[float]
    incumbent_repeats: list[float]
    metric: float | None = None
    incumbent_metric: float | None = None
    gain: float
    """Mean paired improvement over the incumbent in the task's direction (positive = better)."""
    noise_floor: float
    effect_size: float | None = None
    """Mean paired difference over its standard deviation; absent when that is zero."""
    gate_decision: GateDecision | None = None
    """How the race over paired seeds ended (absent for a re-measurement of the incumbent,
    a change not measured, and records made before racing)."""
    max_seeds: int | None = None
    """The race's budget of paired seeds (absent where ``gateDecision`` is)."""
    supports_adoption: bool
    target_met: bool
    reasons: list[str]
    """Why the change was rejected or its parent could not be verified."""
    diff: str
    """The change as applied to the parent (a unified diff, shortened when long)."""
    summary: str
    reconsidered: bool
    reconsideration_due: bool
    contained: bool | None = None
    """Whether every experiment this evidence rests on ran in a box (absent when none ran,
    and in records made before experiments were boxed)."""
    self_scored: bool = False
    """The task is a code task whose candidate prints its own metric (no scorer)."""


class ReviewerInput(ResearchModel):
    task: str
    study: str
    workspace: str
    change: Change
    evidence: Evidence


class ReviewVerdict(ResearchModel):
    verdict: VerdictLabel
    reason: str
    corrections: str
    """Concrete corrections for the researcher; empty unless ``verdict`` is corrections."""
    title: str
    description: str
    adopt: bool
    """Whether the reviewer accepts adopting the candidate; it takes effect only when the
    trusted evidence supports the adoption."""


class ResearchResult(ResearchModel):
    """A decided round, written by the trusted adoption step from the trusted evidence."""

    round: Round
    parent_id: str
    candidate_id: str
    strategy: Origin
    approach: str
    params: ParamsJson
    measure_status: MeasureStatus
    experiment_status: ResultStatus
    metric: float | None = None
    """Mean of the candidate's measurements on the paired seeds; absent when none succeeded."""
    metric_repeats: list[float]
    incumbent_id: str
    """The incumbent this round was compared against (the one before the round)."""
    incumbent_metric: float | None = None
    gain: float
    """Improvement over the incumbent in the task's direction (positive = better)."""
    noise_floor: float
    """The gain a real improvement must beat, from the paired measurements."""
    effect_size: float | None = None
    gate_decision: GateDecision | None = None
    """How the decided evidence's race ended (see ``Evidence``)."""
    max_seeds: int | None = None
    """The race's budget of paired seeds (see ``Evidence``)."""
    evidence: str
    disposition: Disposition
    justification: str
    bytes_verified: bool
    candidate_sha256: str
    reconsidered: bool
    """Whether this round reconsidered (new mechanism, archived parent, more repeats)."""
    reconsideration_due: bool
    """Whether the engine said reconsideration was due."""
    contained: bool | None = None
    """Whether the experiments of the decided evidence ran in a box (see ``Evidence``)."""
    self_scored: bool = False
    """The metric came from the candidate's own code (a code task without a scorer)."""

    @property
    def compared(self) -> bool:
        """Whether the candidate was measured against the incumbent on a paired seed: a
        candidate that crashed, hung or printed no metric first was not, and its recorded
        gain and noise floor (0) are no measurement."""
        return bool(self.metric_repeats) and self.metric is not None
