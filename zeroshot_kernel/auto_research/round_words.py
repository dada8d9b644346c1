"""A reviewed round in plain words, the same in every view: the rounds table, the candidate
view, the records' ``summary.md`` and ``zeroshot research show``.

A round that measured the incumbent again (the challenge scout's ``challenge:remeasure``,
or the researcher's fallback when no proposal was usable) adopted nothing and rejected
nothing: it reads ``re-measured the incumbent c046``, never as a rejection. Pure functions
of recorded strings; no UI library.

>>> approach_words("challenge:remeasure", "c046", "c046")
're-measured the incumbent c046'
>>> approach_words("exploration:ei", "c047", "c046")
'exploration:ei'
>>> decision_words("reject", "c046", "c046")
're-measured the incumbent c046'
>>> decision_words("reject", "c047", "c046")
'kept the incumbent'
"""

from __future__ import annotations

from zeroshot_kernel.auto_research.protocol import REMEASURE

REMEASURED = "re-measured"
"""The short word for a round that measured the incumbent again."""
RECONSIDERED = "a different approach"
"""What a reconsidered round did (a new kind of change, from an earlier candidate, with
more repeats), said without the word 'reconsidered'."""


def is_remeasure(approach: str, candidate: str, parent: str) -> bool:
    """The round measured its parent (the incumbent) again instead of changing it."""
    return approach == REMEASURE or (bool(candidate) and candidate == parent)


def remeasured_words(candidate: str) -> str:
    """``re-measured the incumbent c046``."""
    return f"{REMEASURED} the incumbent {candidate}".rstrip()


def approach_words(approach: str, candidate: str, parent: str) -> str:
    """The change a round made: ``re-measured the incumbent c046`` for a re-measurement,
    else the approach as recorded (``exploration:ei``)."""
    if is_remeasure(approach, candidate, parent):
        return remeasured_words(candidate)
    return approach


def decision_words(disposition: str, candidate: str, parent: str, approach: str = "") -> str:
    """What a round decided: ``adopted``, ``re-measured the incumbent c046``, ``kept the
    incumbent``, ``stopped``, or ``undecided`` (no decision recorded yet)."""
    if disposition == "adopt":
        return "adopted"
    if is_remeasure(approach, candidate, parent):
        return remeasured_words(candidate)
    if not disposition:
        return "undecided"
    return {"reject": "kept the incumbent", "stop": "stopped"}.get(disposition, disposition)


def reconsidered_words(parent: str) -> str:
    """``a different approach, from c003``: a reconsidered round's note."""
    return f"{RECONSIDERED}, from {parent}" if parent else RECONSIDERED
