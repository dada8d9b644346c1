"""The typed inputs and outputs of the research agents (scouts, researcher, reviewer).

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

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.research.experiment import ExperimentStatus
from zeroshot_kernel.research.task import Params

Strategy = Literal["exploration", "synthesis", "challenge"]
Origin = Literal["baseline", "exploration", "synthesis", "challenge"]
Disposition = Literal["adopt", "reject", "stop"]
VerdictLabel = Literal["accepted", "corrections", "stop_approved"]

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
    pass_id: str | None = None
    """Names this pass (the engine's run, round and pass), so that a retried execution finds
    the row an earlier execution of it recorded and carries that pass on, or returns its
    result, instead of starting it again: no recorded experiment is repeated. Without it,
    every call is a new pass."""


class ResearchResult(ResearchModel):
    round: Round
    parent_id: str
    candidate_id: str
    strategy: Origin
    approach: str
    params: ParamsJson
    experiment_status: ExperimentStatus
    metric: float | None = None
    """Mean of the candidate's successful measurements; absent when none succeeded."""
    metric_repeats: list[float]
    incumbent_id: str
    """The incumbent this round was compared against (the one before the round)."""
    incumbent_metric: float | None = None
    gain: float
    """Improvement over the incumbent in the task's direction (positive = better)."""
    noise_floor: float
    """The gain a real improvement must beat, from the repeated measurements."""
    evidence: str
    disposition: Disposition
    justification: str
    bytes_verified: bool
    candidate_sha256: str
    reconsidered: bool
    """Whether this round reconsidered (new mechanism, archived parent, more repeats)."""
    reconsideration_due: bool
    """Whether the input said reconsideration was due."""


class ReviewerInput(ResearchModel):
    task: str
    study: str
    workspace: str
    result: ResearchResult


class ReviewVerdict(ResearchModel):
    verdict: VerdictLabel
    reason: str
    corrections: str
    """Concrete corrections for the researcher; empty unless ``verdict`` is corrections."""
    title: str
    description: str
