"""``--tier auto``: a read-only classifier proposes ratings; the rules pick the review tier.

Before a software change starts, one verifier (an agent with read-only tools, in a run of
its own, recorded in the ledger like any other) rates the task on the six risk dimensions,
names any hard triggers and says whether the change is one coherent slice touching no public
contract. :func:`~zeroshot_kernel.software_change.review.tiers.resolve_tier` then
decides: the model proposes, the rules dispose. The classification travels in the change
run's input, so the gate can hold a micro change to its eligibility record."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from zeroshot_kernel.contract.outcome import VerifierOutcome
from zeroshot_kernel.exceptions import OperationFailed
from zeroshot_kernel.ledger.events import NodeCompleted, SucceededResult
from zeroshot_kernel.software_change.classifier_graph import CLASSIFIER, classifier_graph
from zeroshot_kernel.software_change.review.tiers import DIMENSIONS, Tier, resolve_tier

if TYPE_CHECKING:
    from zeroshot_kernel.client import Client

CLASSIFY_TIMEOUT_S = 900.0


class ClassificationFailed(OperationFailed):
    """The classifier run did not produce a classification (its reason says why)."""


class Classification(BaseModel):
    """What the classifier proposed and the review tier the rules chose from it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ratings: dict[str, str]
    hard_triggers: list[str]
    coherent_slice: bool
    public_contract: bool
    rationale: str
    run_id: str
    tier: Tier

    def to_input(self) -> dict[str, Any]:
        """The ``review.classification`` record of the change run's input."""
        return {
            "ratings": dict(self.ratings),
            "hardTriggers": list(self.hard_triggers),
            "coherentSlice": self.coherent_slice,
            "publicContract": self.public_contract,
            "run": self.run_id,
        }

    def describe(self) -> str:
        """``micro (all six low; no hard trigger)`` and the like."""
        raised = [f"{d} {r}" for d, r in self.ratings.items() if r != "low"]
        triggers = ", ".join(self.hard_triggers) or "no hard trigger"
        return f"{self.tier} ({', '.join(raised) or 'all six low'}; {triggers})"


def classify(
    client: Client, task: str, *, runtime: dict[str, Any], timeout_s: float = CLASSIFY_TIMEOUT_S
) -> Classification:
    """Run the classifier on ``task`` and resolve the review tier by the rules.

    Raises :class:`ClassificationFailed` when the run fails or times out, and
    ``AdmissionRejected`` when the runtime plan does not fit."""
    run = client.submit(
        classifier_graph(),
        input={"task": task},
        runtime=runtime,
        title=f"software-change classification: {task[:160]}",
    )
    try:
        result = run.result(timeout_s)
    except TimeoutError:
        run.stop()
        raise ClassificationFailed(
            f"the classifier run {run.id} took longer than {timeout_s:g} s; it was stopped"
        ) from None
    if not isinstance(result, SucceededResult):
        raise ClassificationFailed(
            f"the classifier run {run.id} failed ({result.reason}); "
            "choose --tier micro, standard or high-risk instead"
        )
    outcome = next(
        event.completion.outcome
        for _, event in run.events(kinds={"node_completed"})
        if isinstance(event, NodeCompleted) and event.completion.reference.node == CLASSIFIER
    )
    assert isinstance(outcome, VerifierOutcome)
    found: dict[str, Any] = outcome.diagnostic
    ratings = {d: outcome.signals[d] for d in DIMENSIONS}
    triggers = list(found["hardTriggers"])
    return Classification(
        ratings=ratings,
        hard_triggers=triggers,
        coherent_slice=found["coherentSlice"],
        public_contract=found["publicContract"],
        rationale=found["rationale"],
        run_id=run.id,
        tier=resolve_tier(
            "auto",
            ratings,
            triggers,
            coherent_slice=found["coherentSlice"],
            public_contract=found["publicContract"],
        ),
    )
