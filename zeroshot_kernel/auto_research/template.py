"""The ``auto-research`` template: reviewed rounds that improve a candidate against a metric.

Each round: three read-only scouts (verifiers) propose in parallel, then a work/review
cycle: the researcher proposes a typed change to a parent candidate, the trusted measure
step (engine code, never a model) builds, stores and measures it against the incumbent on
paired seeds, and a fresh reviewer judges the change and that evidence: it accepts (saying
whether to adopt), asks for corrections (same round, same researcher session) or approves
a justified early stop. The cycle is bounded at 64 passes. Trusted adoption then decides
the round: the incumbent moves only when the reviewer asked for it and the evidence
supports it. Five model executions per round; the measure and adopt nodes are trusted.

Checks that must end the run ("X failed") sit at the start of the next pass or round,
because a graph continues only into a node that does work: the gate's ``otherwise`` is the
rest of the round.
"""

from __future__ import annotations

from typing import Any

from zeroshot_kernel.auto_research.options import DEFAULT_ITERATIONS, MAX_ITERATIONS
from zeroshot_kernel.auto_research.payloads import record_type
from zeroshot_kernel.auto_research.protocol import Change, Evidence, ResearchResult
from zeroshot_kernel.auto_research.studies.catalog import check_study_name, default_study
from zeroshot_kernel.templates import (
    Expansion,
    Template,
    TemplateOptions,
    agent_binding,
    runtime_plan,
)
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

REVIEW_PASSES = 64
STRATEGIES = ("exploration", "synthesis", "challenge")
REVIEWED = [["corrections"], ["reviewTitle"], ["reviewDescription"]]
"""State the reviewer leaves for the rest of the round (groups pass on only what they
promote)."""
VERDICTS = ("accepted", "corrections", "stop_approved")
ATTEMPTS = 2
"""Tries of every execution: when a controller dies mid-execution, resume closes it as a
crash (runtime_lost) and the retry carries on with the round, since the agents are
idempotent per round and pass, the trusted steps carry a pass on from their records, and
delivery never commits a round twice."""
MEASURE_WORKER = "zeroshot.research.measure@1"
ADOPT_WORKER = "zeroshot.research.adopt@1"

PROPOSAL = record(
    {
        "strategy": enum(*STRATEGIES),
        "approach": string(),
        "paramsJson": string(),
        "rationale": string(),
    }
)
CHANGE = record_type(Change).to_wire()
EVIDENCE = record_type(Evidence).to_wire()
RESULT = record_type(ResearchResult).to_wire()
REVIEW = record(
    {
        "reason": string(),
        "corrections": string(),
        "title": string(),
        "description": string(),
        "adopt": boolean(),
    }
)
OPTIONS = record(optional={"iterations": integer(), "dask": string(), "parallel": integer()})
CARRIED = {
    "task": string(),
    "study": string(),
    "corrections": string(),
    "reviewTitle": string(),
    "reviewDescription": string(),
    "result": RESULT,
    **{s: PROPOSAL for s in STRATEGIES},
}
"""Fields the run input carries from the start (the template fills all but ``task`` and
``study``): a round's last node may fail, and what it writes must be defined on every
route that completes the round."""
INPUT = record(CARRIED, optional={"options": OPTIONS})
STATE = record(CARRIED, optional={"options": OPTIONS, "change": CHANGE, "evidence": EVIDENCE})
DECISIONS = ("adopted", "kept", "stopped")

SCOUT_INSTRUCTIONS = {
    "exploration": "Propose one direction nobody has tried yet for this research task. Read "
    "the charter and the study's records under .zeroshot/research/<study>; change nothing.",
    "synthesis": "Propose one direction that combines what worked in the best accepted "
    "candidates. Read the study's records under .zeroshot/research/<study>; change nothing.",
    "challenge": "Question the incumbent or its measurement: propose a perturbation or a "
    "re-measurement that would expose a false gain. Change nothing.",
}
RESEARCHER_INSTRUCTIONS = (
    "Select the parent candidate (the incumbent, or an archived candidate of the study's "
    "records under .zeroshot/research/<study>) and one proposal, and return it as a change "
    "to that parent: parameter values (paramsJson, within the task's search space) and/or "
    "edits of the task's editable files (whole contents, a unified diff of one file, or a "
    "delete). You do not run the experiment: the engine builds, stores and measures the "
    "change and the incumbent on the same seeds, adding seeds while undecided up to the "
    "task's budget; anything you claim about results is ignored. Ask for a discriminating "
    "measurement (twice the repeats and the budget) when a gain may still be noise. When "
    "the input carries corrections, address them in this same round. Never use git."
)
REVIEWER_INSTRUCTIONS = (
    "Review the change and the engine's evidence for it with fresh eyes. Accept when the "
    "evidence settles the round, and set adopt to true only to adopt a candidate whose gain "
    "beats the noise floor (the engine adopts only then; gateDecision says how its race over "
    "paired seeds ended); accept a supported non-adoption with adopt false; approve an "
    "early stop only with a justification (a plateau alone is not one); otherwise request "
    "concrete corrections. Change nothing."
)


def scout(strategy: str) -> Doc:
    name = f"scout_{strategy}"
    return verifier(
        name,
        f"zeroshot.research.scout-{strategy}@1",
        input=record({"task": string(), "study": string()}),
        output=record({"proposal": PROPOSAL}),
        signals={},
        diagnostic={"kind": "null"},
        input_bindings=[from_state(["task"]), from_state(["study"])],
        write_bindings=[write([strategy], name, "out", ["proposal"])],
        instructions=SCOUT_INSTRUCTIONS[strategy],
        attempts=ATTEMPTS,
    )


def researcher() -> Doc:
    return step(
        "researcher",
        "zeroshot.research.researcher@1",
        input=record(
            {
                "task": string(),
                "study": string(),
                "corrections": string(),
                **{s: PROPOSAL for s in STRATEGIES},
            }
        ),
        output=record({"change": CHANGE}),
        input_bindings=[from_state([f]) for f in ("task", "study", "corrections", *STRATEGIES)],
        write_bindings=[write(["change"], "researcher", "out", ["change"])],
        instructions=RESEARCHER_INSTRUCTIONS,
        attempts=ATTEMPTS,
    )


def measure() -> Doc:
    """Trusted: builds, stores and measures the change (bound to trusted code only)."""
    return step(
        "measure",
        MEASURE_WORKER,
        input=record(
            {
                "task": string(),
                "study": string(),
                "corrections": string(),
                "change": CHANGE,
                **{s: PROPOSAL for s in STRATEGIES},
            }
        ),
        output=record({"evidence": EVIDENCE}),
        input_bindings=[
            from_state([f]) for f in ("task", "study", "corrections", "change", *STRATEGIES)
        ],
        write_bindings=[write(["evidence"], "measure", "out", ["evidence"])],
        attempts=ATTEMPTS,
    )


def reviewer() -> Doc:
    return verifier(
        "reviewer",
        "zeroshot.research.reviewer@1",
        input=record({"task": string(), "study": string(), "change": CHANGE, "evidence": EVIDENCE}),
        output={"kind": "null"},
        signals={"verdict": list(VERDICTS)},
        diagnostic=REVIEW,
        input_bindings=[from_state([f]) for f in ("task", "study", "change", "evidence")],
        write_bindings=[
            write(["corrections"], "reviewer", "diagnostic", ["corrections"]),
            write(["reviewTitle"], "reviewer", "diagnostic", ["title"]),
            write(["reviewDescription"], "reviewer", "diagnostic", ["description"]),
        ],
        instructions=REVIEWER_INSTRUCTIONS,
        attempts=ATTEMPTS,
    )


def adoption() -> Doc:
    """Trusted: decides the reviewed round from the evidence and the reviewer's verdict
    (read from the ledger) and moves the incumbent (bound to trusted code only)."""
    return verifier(
        "adopt",
        ADOPT_WORKER,
        input=record({"task": string(), "study": string(), "evidence": EVIDENCE}),
        output=record({"result": RESULT}),
        signals={"decision": list(DECISIONS)},
        diagnostic={"kind": "null"},
        input_bindings=[from_state([f]) for f in ("task", "study", "evidence")],
        write_bindings=[write(["result"], "adopt", "out", ["result"])],
        attempts=ATTEMPTS,
    )


def review_cycle() -> Doc:
    """Change, trusted measurement, then fresh review, up to 64 passes, until the reviewer
    accepts, approves a stop, or fails (which the round's gate turns into
    ``review_failed``)."""
    measured = seq(
        "measured",
        STATE,
        [
            measure(),
            choice(
                "measure_checked",
                STATE,
                [branch(errored("measure"), fail("measure_failed"))],
                reviewer(),
                promoted=REVIEWED,
            ),
        ],
        promoted=[["evidence"], *REVIEWED],
    )
    passage = seq(
        "pass",
        STATE,
        [
            researcher(),
            choice(
                "research_checked",
                STATE,
                [branch(errored("researcher"), fail("research_failed"))],
                measured,
                promoted=[["evidence"], *REVIEWED],
            ),
        ],
        promoted=[["evidence"], *REVIEWED],
    )
    return loop(
        "review_cycle",
        STATE,
        passage,
        REVIEW_PASSES,
        until=any_of(
            signal_in("reviewer", "verdict", "accepted", "stop_approved"), errored("reviewer")
        ),
        promoted=[["evidence"], *REVIEWED],
    )


def decision(push: bool) -> Doc:
    """After the review: the run ends if the review failed; else trusted adoption decides
    the round (and, with push, delivery publishes an adoption)."""
    decided: Doc = adoption()
    if push:
        adopted = choice(
            "adopted",
            STATE,
            [branch(errored("adopt"), fail("adoption_failed"))],
            delivery(),
            promoted=[["result"]],
        )
        decided = seq(
            "decide_and_deliver", STATE, [adoption(), adopted], promoted=[["result"], *REVIEWED]
        )
    return choice("reviewed", STATE, round_failures(), decided, promoted=[["result"], *REVIEWED])


def round_body(push: bool) -> Doc:
    scouting = par(
        "scouting",
        STATE,
        [scout(s) for s in STRATEGIES],
        {"kind": "all"},
        promoted=[[s] for s in STRATEGIES],
    )
    reviewed = seq(
        "review_and_decide",
        STATE,
        [review_cycle(), decision(push)],
        promoted=[*REVIEWED, ["result"]],
    )
    scouted = choice(
        "scouted",
        STATE,
        [branch(any_of(*(errored(f"scout_{s}") for s in STRATEGIES)), fail("scouting_failed"))],
        reviewed,
        promoted=[*REVIEWED, ["result"]],
    )
    return seq(
        "round",
        STATE,
        [scouting, scouted],
        promoted=[*REVIEWED, ["result"], *([s] for s in STRATEGIES)],
    )


def delivery() -> Doc:
    """Trusted publication of an accepted round (push only); a no-op for other rounds."""
    return verifier(
        "deliver",
        "zeroshot.git-delivery.push@1",
        input=record({"result": RESULT, "title": string(), "description": string()}),
        output={"kind": "null"},
        signals={"delivery": ["published", "skipped", "repair_requested"]},
        diagnostic={"kind": "null"},
        input_bindings=[
            from_state(["result"]),
            from_state(["title"], ["reviewTitle"]),
            from_state(["description"], ["reviewDescription"]),
        ],
        write_bindings=[],
        attempts=ATTEMPTS,
    )


def round_failures() -> list[Doc]:
    """Routes that end the run when a round's review could not be completed."""
    return [
        branch(errored("reviewer"), fail("review_failed")),
        branch(group_in("review_cycle", "terminated", "exhausted"), fail("review_exhausted")),
    ]


def final_gates(push: bool) -> list[Doc]:
    """Run-ending outcomes of a round's last node (adoption, or delivery with push)."""
    if push:
        return [
            branch(errored("deliver"), fail("delivery_failed")),
            branch(
                signal_in("deliver", "delivery", "repair_requested"),
                fail("delivery_repair_requested"),
            ),
        ]
    return [branch(errored("adopt"), fail("adoption_failed"))]


def auto_research_graph(iterations: int = DEFAULT_ITERATIONS, *, push: bool = False) -> Doc:
    """The GraphSpec of an auto-research run with ``iterations`` rounds."""
    if not 1 <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must be between 1 and {MAX_ITERATIONS}, not {iterations}")
    stop = [signal_in("adopt", "decision", "stopped"), errored("adopt")]
    if push:
        stop += [errored("deliver"), signal_in("deliver", "delivery", "repair_requested")]
    rounds = loop(
        "rounds", STATE, round_body(push), iterations, until=any_of(*stop), promoted=[["result"]]
    )
    done = succeed(
        "done",
        record(
            {
                "round": integer(),
                "candidateId": string(),
                "disposition": enum("adopt", "reject", "stop"),
            }
        ),
        [
            from_state(["round"], ["result", "round"]),
            from_state(["candidateId"], ["result", "candidateId"]),
            from_state(["disposition"], ["result", "disposition"]),
        ],
    )
    root = seq("run", STATE, [rounds, choice("finished", STATE, final_gates(push), done)])
    return graph(INPUT, root)


def auto_research_input(
    task: str,
    iterations: int | None = None,
    study: str | None = None,
    dask: str | None = None,
    parallel: int | None = None,
) -> dict[str, Any]:
    """The run input: the task and its study (by default the task folder's name), plus
    empty review fields and placeholders that the first round replaces (proposals, and a
    result no round decided; a scout that fails ends the run before they are read). Its
    ``options`` hold the rounds, the Dask scheduler of the experiments and the candidates
    measured at once, when given."""
    document: dict[str, Any] = {
        "task": task,
        "study": check_study_name(study) if study else default_study(task),
        "corrections": "",
        "reviewTitle": "",
        "reviewDescription": "",
        "result": PLACEHOLDER_RESULT,
        **{
            s: {"strategy": s, "approach": "none yet", "paramsJson": "{}", "rationale": ""}
            for s in STRATEGIES
        },
    }
    options: dict[str, Any] = {"iterations": iterations, "dask": dask, "parallel": parallel}
    if any(v is not None for v in options.values()):
        document["options"] = {k: v for k, v in options.items() if v is not None}
    return document


PLACEHOLDER_RESULT = ResearchResult(
    round=0,
    parent_id="",
    candidate_id="",
    strategy="baseline",
    approach="none yet",
    params={},
    measure_status="measured",
    experiment_status="not_run",
    metric_repeats=[],
    incumbent_id="",
    gain=0.0,
    noise_floor=0.0,
    evidence="",
    disposition="reject",
    justification="no round decided yet",
    bytes_verified=False,
    candidate_sha256="",
    reconsidered=False,
    reconsideration_due=False,
).to_wire()


def expand(options: TemplateOptions) -> Expansion:
    # ``None`` means the default; any given count (0 included) is checked by the graph.
    iterations = DEFAULT_ITERATIONS if options.iterations is None else options.iterations
    nodes: dict[str, Any] = {
        f"scout_{s}": agent_binding(options, scope="node_instance", agent=f"research.scout.{s}")
        for s in STRATEGIES
    }
    nodes["researcher"] = agent_binding(options, scope="node_instance", agent="research.researcher")
    nodes["reviewer"] = agent_binding(options, agent="research.reviewer")
    # Trusted engine code whatever the harness: a model never measures or adopts.
    nodes["measure"] = {"kind": "trusted", "code": "research.measure"}
    nodes["adopt"] = {"kind": "trusted", "code": "research.adopt"}
    if options.push:
        nodes["deliver"] = {"kind": "git_delivery"}
    return Expansion(
        graph=auto_research_graph(iterations, push=options.push),
        input=auto_research_input(
            options.task, options.iterations, options.study, options.dask, options.parallel
        ),
        runtime=runtime_plan(options, nodes),
    )


TEMPLATE = Template(
    "auto-research",
    "Reviewed rounds of three read-only scouts, one researcher proposing a change, "
    "trusted measurement, a fresh reviewer and trusted adoption, improving a candidate "
    "against a measured metric.",
    expand,
)
