"""When the researcher must explicitly reconsider (a pure function over accepted rounds).

The engine computes it from the ledger and passes it in the researcher's input, so it is
visible and testable rather than a sentence in a prompt.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any


def reconsideration_due(rounds: Sequence[Mapping[str, Any]], iterations: int) -> bool:
    """Whether the next round must reconsider, given the accepted rounds so far.

    ``rounds`` are the accepted results in round order, as their wire form (``disposition``,
    ``approach``, ``gain``, ``reconsidered``; missing keys read as not adopted, no gain, not
    reconsidered). Due after two accepted non-adoptions since the last adoption, or when the
    last ``max(1, ceil(iterations / 10))`` rounds all used one approach and each realised
    less gain than the round on that approach before it (diminishing returns). A round that
    reconsidered restarts both counts, so reconsideration comes back periodically rather
    than every round.
    """
    recent = list(rounds)
    for index in range(len(recent) - 1, -1, -1):
        if recent[index].get("reconsidered"):
            recent = recent[index + 1 :]
            break
    since_adoption = 0
    for entry in reversed(recent):
        if entry.get("disposition") == "adopt":
            break
        since_adoption += 1
    if since_adoption >= 2:
        return True
    window = max(1, math.ceil(iterations / 10))
    if not recent:
        return False
    approach = recent[-1].get("approach")
    same = [entry for entry in recent if entry.get("approach") == approach]
    if len(same) < window + 1 or any(e.get("approach") != approach for e in recent[-window:]):
        return False
    gains = [_realised(entry) for entry in same[-(window + 1) :]]
    return all(later < earlier for earlier, later in itertools.pairwise(gains))


def _realised(entry: Mapping[str, Any]) -> float:
    """The gain a round actually brought: its gain when adopted, else nothing."""
    gain = entry.get("gain", 0.0)
    return float(gain) if entry.get("disposition") == "adopt" and gain > 0 else 0.0
