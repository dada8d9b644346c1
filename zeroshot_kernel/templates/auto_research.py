"""The ``auto-research`` template: reviewed rounds that improve a candidate against a metric.

Each round: three read-only scouts (verifiers) propose in parallel, then a work/review
cycle: the researcher (the only writer) runs one experiment and proposes a disposition,
a fresh reviewer accepts it, asks for corrections (same round, same researcher session)
or approves a justified early stop. The cycle is bounded at 64 passes.

Checks that must end the run ("X failed") sit at the start of the next pass or round,
because a graph continues only into a node that does work: the gate's ``otherwise`` is the
rest of the round.
"""

from __future__ import annotations

from typing import Any

from zeroshot_kernel.research.studies import check_study_name, default_study
from zeroshot_kernel.templates.build import (
    Doc,
    any_of,
    boolean,
    branch,
    choice,
    enum,
    errored,
    fail,
    from_state,
    graph,
    group_in,
    integer,
    loop,
    number,
    par,
    record,
    seq,
    signal_in,
    step,
    string,
    succeed,
    verifier,
    write,
)

DEFAULT_ITERATIONS = 10
MAX_ITERATIONS = 100
REVIEW_PASSES = 64
STRATEGIES = ("exploration", "synthesis", "challenge")
REVIEWED = [["result"], ["corrections"], ["reviewTitle"], ["reviewDescription"]]
"""State a work/review pass leaves for the rest of the round (the reviewer writes all but
``result``; groups pass on only what they promote)."""
VERDICTS = ("accepted", "corrections", "stop_approved")
ATTEMPTS = 2
"""Tries of every execution: when a controller dies mid-execution, resume closes it as a
crash (runtime_lost) and the retry carries on with the round, since the agents are
idempotent per round and pass and delivery never commits a round twice."""

PROPOSAL = record({
    "strategy": enum(*STRATEGIES), "approach": string(), "paramsJson": string(),
    "rationale": string(),
})
RESULT = record(
    required={
        "round": integer(), "parentId": string(), "candidateId": string(), "strategy": string(),
        "approach": string(), "paramsJson": string(), "experimentStatus": string(),
        "incumbentId": string(), "gain": number(), "noiseFloor": number(),
        "metricRepeats": {"kind": "array", "items": number()},
        "evidence": string(), "disposition": enum("adopt", "reject", "stop"),
        "justification": string(), "bytesVerified": boolean(), "candidateSha256": string(),
        "reconsidered": boolean(), "reconsiderationDue": boolean(),
    },
    optional={"metric": number(), "incumbentMetric": number()},
)
REVIEW = record({"reason": string(), "corrections": string(), "title": string(),
                 "description": string()})
OPTIONS = record(optional={"iterations": integer()})
CARRIED = {"task": string(), "study": string(), "corrections": string(), "reviewTitle": string(),
           "reviewDescription": string(), **{s: PROPOSAL for s in STRATEGIES}}
"""Fields the run input carries from the start (the template fills all but ``task`` and
``study``)."""
INPUT = record(CARRIED, optional={"options": OPTIONS})
STATE = record(CARRIED, optional={"options": OPTIONS, "result": RESULT})

SCOUT_INSTRUCTIONS = {
    "exploration": "Propose one direction nobody has tried yet for this research task. Read "
    "the charter and the study's records under .zeroshot/research/<study>; change nothing.",
    "synthesis": "Propose one direction that combines what worked in the best accepted "
    "candidates. Read the study's records under .zeroshot/research/<study>; change nothing.",
    "challenge": "Question the incumbent or its measurement: propose a perturbation or a "
    "re-measurement that would expose a false gain. Change nothing.",
}
RESEARCHER_INSTRUCTIONS = (
    "Select the parent candidate and one proposal, verify or restore the parent's bytes, run "
    "the experiment within its time budget, keep the study's records under "
    ".zeroshot/research/<study>, and "
    "return the typed result with compact evidence and a proposed disposition. When the "
    "input carries corrections, address them in this same round. Never use git."
)
REVIEWER_INSTRUCTIONS = (
    "Review the researcher's result with fresh eyes. Accept an adoption only when the gain "
    "beats the measured noise; accept a supported non-adoption; approve an early stop only "
    "with a justification (a plateau alone is not one); otherwise request concrete "
    "corrections. Change nothing."
)


def scout(strategy: str) -> Doc:
    name = f"scout_{strategy}"
    return verifier(
        name, f"zeroshot.research.scout-{strategy}@1",
        input=record({"task": string(), "study": string()}),
        output=record({"proposal": PROPOSAL}), signals={},
        diagnostic={"kind": "null"}, input_bindings=[from_state(["task"]), from_state(["study"])],
        write_bindings=[write([strategy], name, "out", ["proposal"])],
        instructions=SCOUT_INSTRUCTIONS[strategy], attempts=ATTEMPTS,
    )


def researcher() -> Doc:
    return step(
        "researcher", "zeroshot.research.researcher@1",
        input=record({"task": string(), "study": string(), "corrections": string(),
                      **{s: PROPOSAL for s in STRATEGIES}}),
        output=record({"result": RESULT}),
        input_bindings=[from_state([f]) for f in ("task", "study", "corrections", *STRATEGIES)],
        write_bindings=[write(["result"], "researcher", "out", ["result"])],
        instructions=RESEARCHER_INSTRUCTIONS, attempts=ATTEMPTS,
    )


def reviewer() -> Doc:
    return verifier(
        "reviewer", "zeroshot.research.reviewer@1",
        input=record({"task": string(), "study": string(), "result": RESULT}),
        output={"kind": "null"}, signals={"verdict": list(VERDICTS)}, diagnostic=REVIEW,
        input_bindings=[from_state(["task"]), from_state(["study"]), from_state(["result"])],
        write_bindings=[write(["corrections"], "reviewer", "diagnostic", ["corrections"]),
                        write(["reviewTitle"], "reviewer", "diagnostic", ["title"]),
                        write(["reviewDescription"], "reviewer", "diagnostic", ["description"])],
        instructions=REVIEWER_INSTRUCTIONS, attempts=ATTEMPTS,
    )


def review_cycle(push: bool) -> Doc:
    """Work then fresh review, up to 64 passes, until the reviewer accepts, approves a
    stop, or fails (which the run's final gate turns into ``review_failed``)."""
    passage = seq("pass", STATE, [
        researcher(),
        choice("research_checked", STATE,
               [branch(errored("researcher"), fail("research_failed"))], reviewer(),
               promoted=REVIEWED[1:]),
    ], promoted=REVIEWED)
    cycle = loop("review_cycle", STATE, passage, REVIEW_PASSES,
                 until=any_of(signal_in("reviewer", "verdict", "accepted", "stop_approved"),
                              errored("reviewer")),
                 promoted=REVIEWED)
    if not push:
        return cycle
    reviewed = choice("reviewed", STATE, round_failures(), delivery())
    return seq("review_and_deliver", STATE, [cycle, reviewed], promoted=REVIEWED)


def round_body(push: bool) -> Doc:
    scouting = par("scouting", STATE, [scout(s) for s in STRATEGIES], {"kind": "all"},
                   promoted=[[s] for s in STRATEGIES])
    scouted = choice("scouted", STATE,
                     [branch(any_of(*(errored(f"scout_{s}") for s in STRATEGIES)),
                             fail("scouting_failed"))],
                     review_cycle(push), promoted=REVIEWED)
    return seq("round", STATE, [scouting, scouted],
               promoted=[*REVIEWED, *([s] for s in STRATEGIES)])


def delivery() -> Doc:
    """Trusted publication of an accepted round (push only); a no-op for other rounds."""
    return verifier(
        "deliver", "zeroshot.git-delivery.push@1",
        input=record({"result": RESULT, "title": string(), "description": string()}),
        output={"kind": "null"},
        signals={"delivery": ["published", "skipped", "repair_requested"]},
        diagnostic={"kind": "null"},
        input_bindings=[from_state(["result"]), from_state(["title"], ["reviewTitle"]),
                        from_state(["description"], ["reviewDescription"])],
        write_bindings=[], attempts=ATTEMPTS,
    )


def round_failures(suffix: str = "") -> list[Doc]:
    """Routes that end the run when a round could not be completed."""
    return [
        branch(errored("reviewer"), fail(f"review_failed{suffix}", "review_failed")),
        branch(group_in("review_cycle", "terminated", "exhausted"),
               fail(f"review_exhausted{suffix}", "review_exhausted")),
    ]


def delivery_failures() -> list[Doc]:
    return [
        branch(errored("deliver"), fail("delivery_failed")),
        branch(signal_in("deliver", "delivery", "repair_requested"),
               fail("delivery_repair_requested")),
    ]


def auto_research_graph(iterations: int = DEFAULT_ITERATIONS, *, push: bool = False) -> Doc:
    """The GraphSpec of an auto-research run with ``iterations`` rounds."""
    if not 1 <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must be between 1 and {MAX_ITERATIONS}, not {iterations}")
    # A cycle that exhausted its passes ends on a ``corrections`` verdict: that and the
    # other run-ending outcomes leave the rounds, and the final gate names the reason.
    stop = [signal_in("reviewer", "verdict", "stop_approved", "corrections"), errored("reviewer")]
    if push:
        stop += [errored("deliver"), signal_in("deliver", "delivery", "repair_requested")]
    rounds = loop("rounds", STATE, round_body(push), iterations, until=any_of(*stop),
                  promoted=[["result"]])
    gates = delivery_failures() if push else round_failures("_at_end")
    done = succeed("done", record({"round": integer(), "candidateId": string(),
                                   "disposition": enum("adopt", "reject", "stop")}),
                   [from_state(["round"], ["result", "round"]),
                    from_state(["candidateId"], ["result", "candidateId"]),
                    from_state(["disposition"], ["result", "disposition"])])
    root = seq("run", STATE, [rounds, choice("finished", STATE, gates, done)])
    return graph(INPUT, root)


def auto_research_input(task: str, iterations: int | None = None, study: str | None = None
                        ) -> dict[str, Any]:
    """The run input: the task and its study (by default the task folder's name), plus
    empty review fields and placeholder proposals that the first round replaces (a scout
    that fails ends the run before they are read)."""
    document: dict[str, Any] = {
        "task": task, "study": check_study_name(study) if study else default_study(task),
        "corrections": "", "reviewTitle": "", "reviewDescription": "", **{
        s: {"strategy": s, "approach": "none yet", "paramsJson": "{}", "rationale": ""}
        for s in STRATEGIES}}
    if iterations is not None:
        document["options"] = {"iterations": iterations}
    return document
