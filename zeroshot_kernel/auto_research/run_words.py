"""How a run's state is said in words, the same in every view: the widget monitor, its
static snapshot and the JupyterLab front end (through the server extension).

Pure functions of a :class:`ResearchView` and a :class:`Poll`; no UI library, so the
Jupyter server extension, which runs without a kernel, says exactly what the widgets say.
"""

from __future__ import annotations

from zeroshot_kernel.auto_research.round_words import decision_words
from zeroshot_kernel.auto_research.run_feed import Poll
from zeroshot_kernel.auto_research.views import ResearchView, RoundView
from zeroshot_kernel.ledger.events import FailedResult, TerminalResult, was_stopped

STOP_MESSAGES = {
    "already_finished": "the run had already finished",
    "requested": "stop requested; the run's controller is closing it",
    "closed": "closed (no controller was running it)",
}
"""What a Stop reports, by ``Run.stop()``'s outcome."""


def phase_key(poll: Poll) -> str:
    """``admitted``, ``running``, ``stopping``, ``succeeded``, ``failed`` or ``stopped``
    (a stop is not a failure to the reader)."""
    return terminal_key(poll.terminal) or poll.phase


def terminal_key(terminal: TerminalResult | None) -> str | None:
    """``succeeded``, ``failed`` or ``stopped``; None while the run is unfinished."""
    if terminal is None:
        return None
    return "stopped" if was_stopped(terminal) else terminal.status


def phase_text(poll: Poll) -> str:
    """The phase, or the result in a few words (the full output is in the log)."""
    if poll.terminal is None:
        return poll.phase
    if was_stopped(poll.terminal):
        return "stopped"
    if isinstance(poll.terminal, FailedResult):
        return f"failed: {poll.terminal.reason}"
    return "succeeded"


def study_progress(
    view: ResearchView, run_limit: int | None, before: int
) -> tuple[int, int | None]:
    """The study's rounds done and the number it will have at the run's end: ``before``
    (the rounds its records hold from earlier runs, whichever ledger they were in) plus
    this run's own, against its limit."""
    done = before + len(view.run_rounds)
    return done, None if run_limit is None else before + run_limit


def progress_text(view: ResearchView, run_limit: int | None, study_round: int, before: int) -> str:
    """The study's rounds against what the run will bring them to (:func:`study_progress`);
    the round in progress by its study-wide number, as the rounds table numbers them."""
    done, limit = study_progress(view, run_limit, before)
    text = f"{done} / {limit} rounds" if limit else f"{done} rounds"
    if view.terminal is None and limit is not None and done < limit:
        passes = view.passes_in_progress
        text += f" · round {study_round} in progress"
        text += f" (pass {passes + 1})" if passes else ""
    return text


def round_disposition(round_view: RoundView) -> str:
    """What a reviewed round decided, in the rounds table's words (:func:`decision_words`:
    ``adopted``, ``re-measured the incumbent c046``, ``kept the incumbent``...)."""
    return decision_words(
        round_view.disposition, round_view.candidate_id, round_view.parent_id, round_view.approach
    )


def plateau_text(view: ResearchView) -> str:
    """``3 rounds without an adoption since round 9`` (``""`` when the last round adopted,
    or none was reviewed), as the incumbent card says it."""
    if not view.rounds or view.plateau < 1:
        return ""
    adopted = view.incumbent.round if view.incumbent is not None else 0
    since = f"round {adopted}" if adopted else "the start"
    plural = "s" if view.plateau != 1 else ""
    return f"{view.plateau} round{plural} without an adoption since {since}"
