"""The ``software-change`` template: one owner changes code, reviewers check it, trusted
code delivers it.

``seq run[step worker, choice worker_result{error -> fail worker_failed; else seq
changes[loop change_loop, fail change_attempts_exhausted]}]``. Each pass of the loop runs
the declared checks (the trusted ``review_snapshot``, whose receipts the reviewers are
briefed with), then the reviews in parallel (``acceptance``: owner verification;
``code``: the independent review of the main seam, left out for ``micro``), then the
trusted ``review_gate`` replays the seam's review lifecycle from the ledger and routes:
``approved`` to delivery,
``correction`` or ``restart`` (the one strategy restart) to ``review_repair``, ``blocked``
to ``fail blocked``. ``high-risk`` adds an early seam review after the first work and a
final integration review (at most two) before delivery. The loop is a backstop bound;
the review limits themselves are counted in the ledger, which no rename or restart resets.

Each snapshot (``review_snapshot``, ``final_snapshot``) first records the change as a git
tree and fails the run as ``secret_files`` when it holds a secret-looking file, before any
check prints it or any reviewer's brief quotes it.

Before delivery, in every mode, the trusted ``trust_check`` (see
:mod:`zeroshot_kernel.software_change.trust`) compares the worktree, the repository's refs and
config, the remote's refs and the user's checkout with the baseline recorded at
preparation (the run input's ``trust``), and the worktree's snapshot with the tree the last
gate recorded: a violation (or a change after review) fails the run as
``untrusted_change``, a change with no file differing from the base as ``empty_change``,
secret-looking files as ``secret_files``; for push, pr and ship a completion
decision other than ``CANDIDATE_COMPLETE`` fails it as ``unproven`` unless the user allowed
an unproven delivery (``--allow-unproven``), which the receipt then records. Delivery
commits exactly the tree the trust check recorded.

Delivery (``--delivery``): ``none`` succeeds with the change left in the run's worktree;
``push`` publishes the managed branch; ``pr`` (the default) opens or updates a pull
request, takes visible review feedback into the repair loop, waits for required checks
and a conflict-free head and stops without merging; ``ship`` does the same, then merges.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from zeroshot_kernel.contract.documents import node_documents
from zeroshot_kernel.software_change.classifier_graph import CLASSIFICATION
from zeroshot_kernel.software_change.review.ledger import FINAL_GATE_WORKER, SNAPSHOT_WORKER
from zeroshot_kernel.software_change.review.tiers import LIMITS
from zeroshot_kernel.software_change.trust import TRUST_CALLABLE, TRUST_WORKER, placeholder
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

DELIVERY_MODES = ("none", "push", "pr", "ship")
DEFAULT_DELIVERY = "pr"
DELIVERY_REPAIRS = 3
"""Passes of the change loop kept for delivery repairs (feedback, conflict, failed checks)."""
FEEDBACK = ("acceptanceFeedback", "codeFeedback", "deliveryFeedback", "reviewGuidance")
DELIVERY_WORKERS = {
    "push": "builtin.git-delivery.push@1",
    "pr": "builtin.git-delivery.pr@1",
    "ship": "builtin.git-delivery.merge@1",
}
DELIVERY_SIGNALS = {
    "push": ["published", "rejected", "unconfirmed"],
    "pr": ["opened", "feedback", "conflict", "ci_failed", "unconfirmed"],
    "ship": ["merged", "feedback", "conflict", "ci_failed", "approval_required", "unconfirmed"],
}
REPAIRABLE = ("rejected", "feedback", "conflict", "ci_failed")
GATE_WORKER = "zeroshot.review.gate@1"
GATE_CALLABLE = "zeroshot_kernel.software_change.review.gate:review_gate"
SNAPSHOT_CALLABLE = "zeroshot_kernel.software_change.review.gate:review_snapshot"
FINAL_GATE_CALLABLE = "zeroshot_kernel.software_change.review.gate:final_gate"
TRUSTED_NODES = {
    "review_gate": GATE_CALLABLE,
    "review_snapshot": SNAPSHOT_CALLABLE,
    "final_snapshot": SNAPSHOT_CALLABLE,
    "final_gate": FINAL_GATE_CALLABLE,
    "trust_check": TRUST_CALLABLE,
}
"""The python-harness nodes (trusted code, no agent) and their callables."""
"""Trusted code that records the worktree's fingerprint just before the reviewers start, so
the gate can prove their checkout unchanged (the reviewers are read-only)."""
SEAM_REVIEWER = "builtin.agent.code-verifier@1"
INTEGRATION_REVIEWER = "builtin.agent.integration-verifier@1"
REPAIR_WORKER = "builtin.agent.review-repair@1"
AGENT_NODES = (
    "worker",
    "acceptance",
    "code",
    "review_repair",
    "delivery_repair",
    "seam_review",
    "early_correction",
    "integration_review",
    "final_correction",
)

DELIVERY = record(
    {
        "mode": enum("push", "pr", "ship"),
        "remote": string(),
        "targetBranch": string(),
        "baseRevision": string(),
        "feedback": boolean(),
    },
    optional={
        "repository": string(),
        "apiUrl": string(),
        "pollSeconds": integer(),
        "checksTimeoutSeconds": integer(),
    },
)
REVIEW = record(
    {
        "tier": enum("micro", "standard", "high-risk"),
        "seam": string(),
        "checks": {"kind": "array", "items": string()},
    },
    optional={"classification": CLASSIFICATION},
)
"""The review record: the review tier, the seam, the checks; ``classification`` when
``--tier auto`` chose the tier. Runs recorded before the rename name the tier ``profile``;
the gate reads either (``review.tiers.review_tier``)."""
RECEIPT = record(
    {
        "version": string(),
        "repository": string(),
        "targetBranch": string(),
        "headRevision": string(),
        "pullRequestId": integer(),
        "mode": string(),
        "outcome": string(),
    },
    optional={"completion": string(), "unproven": string()},
)
"""The delivery receipt; ``completion`` is the completion decision it delivered under,
``unproven`` says why when the user allowed an unproven delivery."""
TRUST = record(
    {
        f: string()
        for f in (
            "version",
            "mode",
            "baseRevision",
            "remote",
            "remoteRefsJson",
            "refsJson",
            "configJson",
            "userHead",
            "userIndex",
            "userFiles",
        )
    }
    | {"allowUnproven": boolean()}
)
"""The baseline recorded at preparation (:func:`zeroshot_kernel.software_change.trust.baseline`)."""
TRUST_SIGNALS = ["trusted", "unproven_allowed", "tampered", "empty", "secret", "unproven"]
TRUST_FAILURES = {
    "tampered": "untrusted_change",
    "empty": "empty_change",
    "secret": "secret_files",
    "unproven": "unproven",
}
DELIVERY_ATTEMPTS = 2
AGENT_ATTEMPTS = 2
"""A writing agent's execution lost with its controller (killed, host gone) is retried
once on resume; its worktree keeps what the lost attempt wrote."""
"""A delivery whose controller died is retried once on resume; it reconciles with the
remote (a push that happened is recorded, not repeated)."""
MESSAGE = record({"message": string()})

WORKER_INSTRUCTIONS = (
    "You own this change from request to proof. Make it in the current directory (the "
    "run's own git worktree), keep it focused, follow the repository's guidance and run "
    "the checks that prove it. Leave your work in the working tree; trusted delivery "
    "commits and publishes it. Never push, never switch branches."
)
ACCEPTANCE_INSTRUCTIONS = (
    "Verify the owner's change against the task: does the working tree do what was asked, "
    "and do the repository's checks pass? Change nothing. Answer accepted or rejected with "
    "a concrete message."
)
CODE_INSTRUCTIONS = (
    "Review the change in this worktree with fresh eyes, as an independent reviewer of its "
    "main seam: try to falsify its claims. Change nothing. Answer accepted, rejected "
    "(Critical or Important findings the owner must fix) or load_bearing (the approach "
    "itself is wrong), with the findings in the message."
)
REPAIR_INSTRUCTIONS = (
    "Fix every Critical and Important finding in the feedback in one wave, in this "
    "worktree; Minor findings never loop. When the guidance asks for a strategy restart, "
    "change the approach materially, prove it with a focused check, and say why."
)
DELIVERY_REPAIR_INSTRUCTIONS = (
    "Delivery could not finish: address the delivery feedback (pull request review, "
    "conflict with the target branch, failing required checks) in this worktree."
)
EARLY_INSTRUCTIONS = (
    "Early seam review of a high-risk change while there is still time to change course: "
    "is the load-bearing approach sound? Change nothing. Answer accepted or rejected."
)
INTEGRATION_INSTRUCTIONS = (
    "Final integration review of the stable candidate (scope: integration): do the parts "
    "fit, are the public contracts kept? Change nothing. Answer accepted or rejected."
)
CORRECTION_INSTRUCTIONS = (
    "Address the review findings in the feedback, in this worktree; when the review "
    "accepted the approach, keep it and change nothing."
)


def state(mode: str) -> Doc:
    fields: dict[str, Doc] = {
        "task": string(),
        "review": REVIEW,
        "trust": TRUST,
        **{f: string() for f in FEEDBACK},
    }
    if mode != "none":
        fields["delivery"] = DELIVERY
    return record(fields)


def _reviewer(
    name: str,
    worker: str,
    feedback: str,
    instructions: str,
    labels: list[str],
    inputs: tuple[str, ...] = ("task", "deliveryFeedback"),
) -> Doc:
    return verifier(
        name,
        worker,
        input=record({f: string() for f in inputs}),
        output={"kind": "null"},
        signals={"verdict": labels},
        diagnostic=MESSAGE,
        input_bindings=[from_state([f]) for f in inputs],
        write_bindings=[write([feedback], name, "diagnostic", ["message"])],
        instructions=instructions,
    )


def _repair(name: str, worker: str, instructions: str, inputs: tuple[str, ...]) -> Doc:
    return step(
        name,
        worker,
        input=record({f: string() for f in inputs}),
        output={"kind": "null"},
        input_bindings=[from_state([f]) for f in inputs],
        write_bindings=[],
        instructions=instructions,
        attempts=AGENT_ATTEMPTS,
    )


def _gate(st: Doc) -> Doc:
    return verifier(
        "review_gate",
        GATE_WORKER,
        input=record({"review": REVIEW}),
        output={"kind": "null"},
        signals={"lifecycle": ["approved", "correction", "restart", "blocked"]},
        diagnostic=record({"message": string(), "recordJson": string()}),
        input_bindings=[from_state(["review"])],
        write_bindings=[write(["reviewGuidance"], "review_gate", "diagnostic", ["message"])],
    )


def _deliver(mode: str) -> Doc:
    return verifier(
        "deliver",
        DELIVERY_WORKERS[mode],
        input=record({"task": string(), "delivery": DELIVERY}),
        output=record({"receipt": RECEIPT}),
        signals={"delivery": DELIVERY_SIGNALS[mode]},
        diagnostic=MESSAGE,
        input_bindings=[from_state(["task"]), from_state(["delivery"])],
        write_bindings=[
            write(["receipt"], "deliver", "out", ["receipt"]),
            write(["deliveryFeedback"], "deliver", "diagnostic", ["message"]),
        ],
        attempts=DELIVERY_ATTEMPTS,
    )


def _delivery(mode: str, st: Doc) -> Doc:
    """The trust check, then delivery (see the module doc)."""
    check = verifier(
        "trust_check",
        TRUST_WORKER,
        input=record({"trust": TRUST}),
        output={"kind": "null"},
        signals={"trust": TRUST_SIGNALS},
        diagnostic=record({"message": string(), "completion": string(), "tree": string()}),
        input_bindings=[from_state(["trust"])],
        write_bindings=[],
    )
    routes = [branch(errored("trust_check"), fail("trust_check_failed", "untrusted_change"))]
    routes += [
        branch(signal_in("trust_check", "trust", signal), fail(reason))
        for signal, reason in TRUST_FAILURES.items()
    ]
    return seq(
        "trusted_delivery",
        st,
        [
            check,
            choice(
                "trust_result",
                st,
                routes,
                _deliver_and_finish(mode, st),
                promoted=[["deliveryFeedback"]],
            ),
        ],
        promoted=[["deliveryFeedback"]],
    )


def _deliver_and_finish(mode: str, st: Doc) -> Doc:
    if mode == "none":
        return succeed("done", {"kind": "null"}, [])
    local: Doc = {
        "kind": "record",
        "fields": {**st["fields"], "receipt": {"type": RECEIPT, "required": False}},
    }
    routes = [
        branch(errored("deliver"), fail("delivery_failed")),
        branch(signal_in("deliver", "delivery", "unconfirmed"), fail("delivery_unconfirmed")),
    ]
    if mode == "ship":
        routes.append(
            branch(signal_in("deliver", "delivery", "approval_required"), fail("approval_required"))
        )
    repairable = [s for s in REPAIRABLE if s in DELIVERY_SIGNALS[mode]]
    routes.append(
        branch(
            signal_in("deliver", "delivery", *repairable),
            _repair(
                "delivery_repair",
                "builtin.agent.delivery-repair@1",
                DELIVERY_REPAIR_INSTRUCTIONS,
                ("task", "deliveryFeedback"),
            ),
        )
    )
    done = succeed("done", record({"receipt": RECEIPT}), [from_state(["receipt"])])
    return seq(
        "delivery_and_finish",
        local,
        [_deliver(mode), choice("delivered", local, routes, done, promoted=[["deliveryFeedback"]])],
        promoted=[["deliveryFeedback"]],
    )


def _finish(mode: str, tier: str, st: Doc) -> Doc:
    """Delivery; for high-risk behind at most two final integration reviews (a second
    failure ends the run as ``blocked``; a delivery repair asks for a fresh one)."""
    if tier != "high-risk":
        return _delivery(mode, st)
    review = _reviewer(
        "integration_review",
        INTEGRATION_REVIEWER,
        "codeFeedback",
        INTEGRATION_INSTRUCTIONS,
        ["accepted", "rejected"],
    )
    correction = _repair(
        "final_correction", REPAIR_WORKER, CORRECTION_INSTRUCTIONS, ("task", "codeFeedback")
    )
    keep = [["codeFeedback"], ["deliveryFeedback"]]
    final_gate = verifier(
        "final_gate",
        FINAL_GATE_WORKER,
        input=record({"review": REVIEW}),
        output={"kind": "null"},
        signals={"decision": ["recorded"]},
        diagnostic=record({"message": string(), "recordJson": string()}),
        input_bindings=[from_state(["review"])],
        write_bindings=[],
    )
    gated = seq(
        "final_gated",
        st,
        [
            final_gate,
            choice(
                "final_gate_result",
                st,
                [branch(errored("final_gate"), fail("final_gate_failed", "review_failed"))],
                _delivery(mode, st),
                promoted=keep,
            ),
        ],
        promoted=keep,
    )
    reviewed = seq(
        "final_reviewed",
        st,
        [
            review,
            choice(
                "integration_result",
                st,
                [
                    branch(
                        errored("integration_review"), fail("final_review_failed", "review_failed")
                    ),
                    branch(signal_in("integration_review", "verdict", "accepted"), gated),
                ],
                correction,
                promoted=keep,
            ),
        ],
        promoted=keep,
    )
    body = seq("final_pass", st, _screened("final_snapshot", st, reviewed, keep), promoted=keep)
    final = loop("final_reviews", st, body, LIMITS.final_integration_reviews, promoted=keep)
    return seq("finish", st, [final, fail("final_reviews_blocked", "blocked")])


def _pass(mode: str, tier: str, st: Doc) -> Doc:
    reviewers = [
        _reviewer(
            "acceptance",
            "builtin.agent.acceptance-verifier@1",
            "acceptanceFeedback",
            ACCEPTANCE_INSTRUCTIONS,
            ["accepted", "rejected"],
        )
    ]
    if tier != "micro":
        reviewers.append(
            _reviewer(
                "code",
                SEAM_REVIEWER,
                "codeFeedback",
                CODE_INSTRUCTIONS,
                ["accepted", "rejected", "load_bearing"],
            )
        )
    promoted = [[f] for f in FEEDBACK]
    reviews = par(
        "parallel_reviews",
        st,
        reviewers,
        {"kind": "all"},
        promoted=[["acceptanceFeedback"], *([["codeFeedback"]] if tier != "micro" else [])],
    )
    repair = _repair("review_repair", REPAIR_WORKER, REPAIR_INSTRUCTIONS, ("task", *FEEDBACK))
    gated = seq(
        "gated",
        st,
        [
            _gate(st),
            choice(
                "review_result",
                st,
                [
                    branch(errored("review_gate"), fail("gate_failed", "review_failed")),
                    branch(signal_in("review_gate", "lifecycle", "blocked"), fail("blocked")),
                    branch(
                        signal_in("review_gate", "lifecycle", "approved"), _finish(mode, tier, st)
                    ),
                ],
                repair,
                promoted=promoted,
            ),
        ],
        promoted=promoted,
    )
    checked = choice(
        "reviews_checked",
        st,
        [branch(any_of(*(errored(r["name"]) for r in reviewers)), fail("review_failed"))],
        gated,
        promoted=promoted,
    )
    # every tier, micro included: the reviewers' briefs carry receipts for the very tree
    # they review, from the first pass on
    reviewed = seq("reviewed_pass", st, [reviews, checked], promoted=promoted)
    return seq(
        "change_pass", st, _screened("review_snapshot", st, reviewed, promoted), promoted=promoted
    )


def _screened(name: str, st: Doc, then: Doc, promoted: list[list[str]]) -> list[Doc]:
    """The snapshot ``name``, then ``then`` unless the change holds a secret-looking file
    (the run fails as ``secret_files`` before any check or reviewer sees it)."""
    secret = branch(signal_in(name, "checkout", "secret"), fail(f"{name}_secret", "secret_files"))
    return [_snapshot(name), choice(f"{name}_result", st, [secret], then, promoted=promoted)]


def _snapshot(name: str) -> Doc:
    fields = (
        "gitCommit",
        "gitTree",
        "workingTreeHash",
        "dirtyTreeFingerprint",
        "snapshotTree",
        "message",
        "recordJson",
    )
    return verifier(
        name,
        SNAPSHOT_WORKER,
        input={"kind": "null"},
        output={"kind": "null"},
        signals={"checkout": ["recorded", "secret"]},
        diagnostic=record({f: string() for f in fields}),
        input_bindings=[],
        write_bindings=[],
    )


def loop_bound(tier: str) -> int:
    passes = LIMITS.seam_review_passes if tier != "micro" else 2
    return passes + DELIVERY_REPAIRS


def software_change_graph(delivery: str = DEFAULT_DELIVERY, tier: str = "standard") -> Doc:
    if delivery not in DELIVERY_MODES:
        raise ValueError(f"delivery must be one of {', '.join(DELIVERY_MODES)}, not {delivery!r}")
    if tier not in ("micro", "standard", "high-risk"):
        raise ValueError(f"review tier must be micro, standard or high-risk, not {tier!r}")
    st = state(delivery)
    promoted = [[f] for f in FEEDBACK]
    change_loop = loop(
        "change_loop", st, _pass(delivery, tier, st), loop_bound(tier), promoted=promoted
    )
    changes = seq("changes", st, [change_loop, fail("change_attempts_exhausted")])
    then: Doc = changes
    if tier == "high-risk":
        early = _reviewer(
            "seam_review",
            "builtin.agent.seam-verifier@1",
            "codeFeedback",
            EARLY_INSTRUCTIONS,
            ["accepted", "rejected"],
        )
        correction = _repair(
            "early_correction",
            "builtin.agent.early-correction@1",
            CORRECTION_INSTRUCTIONS,
            ("task", "codeFeedback"),
        )
        # The owner always answers the early review (accepted: it keeps its course).
        then = seq(
            "reviewed_changes",
            st,
            [
                early,
                choice(
                    "early_result",
                    st,
                    [branch(errored("seam_review"), fail("early_review_failed", "review_failed"))],
                    seq("corrected_changes", st, [correction, changes]),
                ),
            ],
        )
    worker = _repair("worker", "builtin.agent.software-worker@1", WORKER_INSTRUCTIONS, ("task",))
    root = seq(
        "run",
        st,
        [
            worker,
            choice("worker_result", st, [branch(errored("worker"), fail("worker_failed"))], then),
        ],
    )
    return graph(st, root)


def software_change_input(
    task: str,
    *,
    tier: str = "standard",
    seam: str = "main",
    checks: list[str] | None = None,
    delivery: dict[str, Any] | None = None,
    classification: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The run input: the task, empty feedback fields, the review tier (with the
    classification that chose it, if ``auto`` did), a placeholder ``trust`` baseline (the
    real one is recorded when the run is submitted) and, unless delivery is ``none``, the
    prepared delivery (mode, remote, target branch, base)."""
    review: dict[str, Any] = {"tier": tier, "seam": seam, "checks": list(checks or [])}
    if classification is not None:
        review["classification"] = classification
    mode = str(delivery["mode"]) if delivery is not None else "none"
    document: dict[str, Any] = {
        "task": task,
        **{f: "" for f in FEEDBACK},
        "review": review,
        "trust": placeholder(mode),
    }
    if delivery is not None:
        document["delivery"] = delivery
    return document


def placeholder_delivery(mode: str) -> dict[str, Any]:
    """What ``template show`` prints for delivery before a repository is prepared."""
    return {
        "mode": mode,
        "remote": "origin",
        "targetBranch": "main",
        "baseRevision": "0" * 40,
        "feedback": True,
    }


SOFTWARE_CHANGE_MODEL = "claude-sonnet-5"
"""The coding agents' model on the claude harness unless ``--model`` says otherwise."""


def expand(options: TemplateOptions) -> Expansion:
    if options.harness == "local":  # no embedded software agents: the coding agent is claude
        options = replace(options, harness="claude")
    graph = software_change_graph(options.delivery, options.tier)
    present = _executables(graph["root"])
    nodes: dict[str, Any] = {
        name: agent_binding(options, scope="node_instance")
        for name in AGENT_NODES
        if name in present
    }
    nodes |= {
        name: {"kind": "agent", "harness": "python", "callable": trusted}
        for name, trusted in TRUSTED_NODES.items()
        if name in present
    }
    if options.delivery != "none":
        nodes["deliver"] = {"kind": "git_delivery"}
        if options.delivery in ("pr", "ship"):
            nodes["deliver"]["connections"] = ["github"]
    delivery = (
        None
        if options.delivery == "none"
        else (options.prepared or placeholder_delivery(options.delivery))
    )
    runtime = runtime_plan(options, nodes)
    if options.harness == "claude" and not options.model:
        runtime["model"] = SOFTWARE_CHANGE_MODEL
    return Expansion(
        graph=graph,
        input=software_change_input(
            options.task,
            tier=options.tier,
            checks=list(options.checks),
            delivery=delivery,
            classification=options.classification,
        ),
        runtime=runtime,
    )


def _executables(node: dict[str, Any]) -> set[str]:
    return {n["name"] for n in node_documents(node) if n["kind"] in ("step", "verifier")}


TEMPLATE = Template(
    "software-change",
    "One owner changes code in its own worktree; reviewers under the review "
    "discipline; trusted delivery (none, push, pull request, ship).",
    expand,
)
