"""The graph of ``--tier auto``'s classifier: one read-only verifier rates the task.

Its signals are the six risk dimensions (``low``, ``medium``, ``high``); its diagnostic lists
the hard triggers and says whether the change is one coherent slice touching no public
contract (see ``zeroshot_kernel.software_change.review.classify``, which runs it and
applies the rules).
"""

from __future__ import annotations

from typing import Any

from zeroshot_kernel.software_change.review.tiers import DIMENSIONS, HARD_TRIGGERS
from zeroshot_kernel.templates.build import (
    Doc,
    boolean,
    branch,
    choice,
    enum,
    errored,
    fail,
    from_state,
    graph,
    record,
    seq,
    string,
    succeed,
    verifier,
)

CLASSIFIER = "classify"
CLASSIFIER_WORKER = "builtin.agent.change-classifier@1"
RATINGS = ("low", "medium", "high")
INSTRUCTIONS = (
    "Rate the risk of the requested change before anyone writes code. Read the repository "
    "(change nothing). Give each of the six dimensions a signal low, medium or high: "
    "blast_radius (how much breaks if it is wrong), concurrency (races, cancellation, "
    "ownership), security_data (secrets, auth, user data), boundary (public API, protocol, "
    "file formats), novelty (new architecture or unfamiliar ground), observability (how hard a "
    "failure is to see). In the diagnostic list every hard trigger that applies, from: "
    + ", ".join(HARD_TRIGGERS)
    + "; say whether the change is one coherent slice and whether "
    "it touches a public contract; and give a short rationale."
)
CLASSIFICATION = record(
    {
        "ratings": record({d: enum(*RATINGS) for d in DIMENSIONS}),
        "hardTriggers": {"kind": "array", "items": enum(*HARD_TRIGGERS)},
        "coherentSlice": boolean(),
        "publicContract": boolean(),
        "run": string(),
    }
)
"""The classification as the change run's input carries it (``review.classification``)."""


def classifier_graph() -> Doc:
    """One read-only verifier, then succeed; a classifier error fails the run."""
    state = record({"task": string()})
    classify = verifier(
        CLASSIFIER,
        CLASSIFIER_WORKER,
        input=state,
        output={"kind": "null"},
        signals={d: list(RATINGS) for d in DIMENSIONS},
        diagnostic=record(
            {
                "hardTriggers": {"kind": "array", "items": enum(*HARD_TRIGGERS)},
                "coherentSlice": boolean(),
                "publicContract": boolean(),
                "rationale": string(),
            }
        ),
        input_bindings=[from_state(["task"])],
        write_bindings=[],
        instructions=INSTRUCTIONS,
    )
    done = choice(
        "classified",
        state,
        [branch(errored(CLASSIFIER), fail("classifier_failed"))],
        succeed("done", {"kind": "null"}, []),
    )
    return graph(state, seq("classification", state, [classify, done]))


def classifier_runtime(harness: str, model: str | None) -> dict[str, Any]:
    plan: dict[str, Any] = {
        "harness": harness,
        "nodes": {CLASSIFIER: {"kind": "agent", "sessionScope": "execution"}},
    }
    if model:
        plan["model"] = model
    return plan
