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
>>> decision_text("kept the incumbent", "kept the incumbent: the gain is within the noise")
'kept the incumbent: the gain is within the noise'
"""

from __future__ import annotations

import re

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


DECISION_WORDS = (
    "adopted",
    "not adopted",
    "kept the incumbent",
    f"{REMEASURED} the incumbent",
    "stopped",
    "supported non-adoption",
)
"""The words a decision starts with: a reviewer's reason (``kept the incumbent: ...``) and
the trusted adoption's justification (``adopted c005: ...``) may start with them too."""
_DECIDED = "|".join(re.escape(w) for w in DECISION_WORDS)
_LEADING_DECISION = re.compile(
    rf"^(?:(?:{_DECIDED})(?: [A-Za-z]*\d[\w.-]*)?\s*[:;,]\s*)+", re.IGNORECASE
)
_JARGON = (
    (re.compile(re.escape(REMEASURE)), "a re-measurement of the incumbent"),
    (
        re.compile(r"\bsupported non-adoption\b", re.IGNORECASE),
        "decision to keep the incumbent (the evidence supports it)",
    ),
    (re.compile(r"\bno_metric\b"), "no metric"),
    (re.compile(r"\btimed_out\b"), "timed out"),
    (re.compile(r"\bresource_limit\b"), "over its limits"),
)


def plain_words(text: str) -> str:
    """Recorded text (a reviewer's reason, a gate's note) without the protocol's words:
    ``challenge:remeasure``, ``no_metric``, ``supported non-adoption``.

    >>> plain_words("a supported non-adoption: the run ended no_metric")
    'a decision to keep the incumbent (the evidence supports it): the run ended no metric'
    """
    for pattern, words in _JARGON:
        text = pattern.sub(words, text)
    return text


def decision_text(words: str, why: str) -> str:
    """What a round decided and why, saying the decision once: ``kept the incumbent: the
    gain is within the noise``. ``why`` (a reviewer's reason, which may already start with
    decision words: ``kept the incumbent: ...``) loses those leading words; an empty
    ``why`` leaves ``words`` alone.

    >>> decision_text("re-measured the incumbent c046", "kept the incumbent: measured again")
    're-measured the incumbent c046: measured again'
    >>> decision_text("adopted", "adopted c005: gain 0.3; the reviewer accepted")
    'adopted: gain 0.3; the reviewer accepted'
    >>> decision_text("adopted", "")
    'adopted'
    """
    rest = _LEADING_DECISION.sub("", why.strip()).strip()
    if not rest or rest.lower() == words.lower():
        return words
    return f"{words}: {plain_words(rest)}"
