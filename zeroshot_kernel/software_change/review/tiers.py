"""Review tiers and the review limits they bring.

``micro`` is owner work plus owner verification; ``standard`` adds an independent review
of the main seam; ``high-risk`` adds an early seam review and a final integration review.
``auto`` is resolved by rules from the six risk dimensions and the hard triggers (the
classifier of ``review.classify`` proposes ratings; the rules decide the tier).

Runs recorded before the rename from "profile" carry their tier under the review record's
``profile`` key; :func:`review_tier` reads either (``tier`` first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict

Tier = Literal["micro", "standard", "high-risk"]
TierChoice = Literal["micro", "standard", "high-risk", "auto"]
Rating = Literal["low", "medium", "high"]
TIERS: tuple[str, ...] = ("micro", "standard", "high-risk", "auto")
DIMENSIONS = (
    "blast_radius",
    "concurrency",
    "security_data",
    "boundary",
    "novelty",
    "observability",
)
HARD_TRIGGERS = (
    "auth_secrets_trust",
    "destructive_migration",
    "races_cancellation_ownership",
    "public_api_compatibility",
    "native_or_live_only_proof",
    "broad_architecture",
)


class ReviewLimits(BaseModel):
    """The review lifecycle's limits (never prompt text: graph bounds and ledger counters)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    correction_rechecks_per_cycle: int = 1
    review_cycles_per_seam: int = 2
    strategy_restarts_per_seam: int = 1
    final_integration_reviews: int = 2

    @property
    def seam_review_passes(self) -> int:
        """Reviews of one seam at most: each cycle is a review plus its rechecks."""
        return self.review_cycles_per_seam * (1 + self.correction_rechecks_per_cycle)


LIMITS = ReviewLimits()


def resolve_tier(
    choice: str,
    ratings: Mapping[str, str] | None = None,
    triggers: Sequence[str] = (),
    *,
    coherent_slice: bool = True,
    public_contract: bool = False,
) -> Tier:
    """The review tier a run uses. ``auto`` follows the rules: any hard trigger or High rating
    is high-risk, any Medium is standard, all Low is micro if the change is one coherent
    slice touching no public contract (else standard); unrated dimensions count as Medium
    (missing information never makes work look smaller)."""
    if choice not in TIERS:
        raise ValueError(f"unknown review tier {choice!r}; choose one of {', '.join(TIERS)}")
    if choice != "auto":
        return choice  # type: ignore[return-value]
    unknown = set(triggers) - set(HARD_TRIGGERS)
    if unknown:
        raise ValueError(f"unknown hard trigger(s): {', '.join(sorted(unknown))}")
    rated = {d: (ratings or {}).get(d, "medium") for d in DIMENSIONS}
    if triggers or "high" in rated.values():
        return "high-risk"
    if "medium" in rated.values() or not coherent_slice or public_contract:
        return "standard"
    return "micro"


def review_tier(review: Mapping[str, Any]) -> Tier:
    """The tier of a run input's review record: its ``tier``, else the ``profile`` key of
    runs recorded before the rename (they resume and are judged the same)."""
    tier = review["tier"] if "tier" in review else review["profile"]
    if tier not in TIERS or tier == "auto":
        raise ValueError(f"unknown review tier {tier!r} in the run's review record")
    return cast(Tier, tier)
