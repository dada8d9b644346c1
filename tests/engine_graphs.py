"""Graphs for the engine end-to-end tests, built as wire dicts, with their runtime plans.

Every graph here passes admission; each scenario function returns ``(graph, runtime)``
where the runtime binds every executable to a callable in ``engine_workers``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Node = dict[str, Any]

INT = {"kind": "integer"}
STR = {"kind": "string"}
NULL = {"kind": "null"}
ERRORS = ["crash", "malformed", "refusal", "timeout"]
VERDICT = ["accepted", "rejected"]


# --- types, selectors, bindings, guards ----------------------------------------------------


def field(type_: Mapping[str, Any], *, required: bool = True) -> dict[str, Any]:
    return {"type": dict(type_), "required": required}


def opt(type_: Mapping[str, Any]) -> dict[str, Any]:
    return field(type_, required=False)


def rec(**fields: Mapping[str, Any]) -> dict[str, Any]:
    """A record; a field is required unless wrapped in :func:`opt`."""
    return {
        "kind": "record",
        "fields": {
            name: dict(value) if "required" in value else field(value)
            for name, value in fields.items()
        },
    }


def arr(items: Mapping[str, Any]) -> dict[str, Any]:
    return {"kind": "array", "items": dict(items)}


def enum(*values: str) -> dict[str, Any]:
    return {"kind": "enum", "values": sorted(values)}


def state(path: str) -> dict[str, Any]:
    return {"source": "state", "path": path.split(".")}


def item(path: str) -> dict[str, Any]:
    return {"source": "item", "path": path.split(".")}


def out(node: str, path: str) -> dict[str, Any]:
    return {"node": node, "channel": "out", "path": path.split(".")}


def signal(node: str, name: str) -> dict[str, Any]:
    return {"node": node, "channel": "signal", "path": [name]}


def diag(node: str, path: str) -> dict[str, Any]:
    return {"node": node, "channel": "diagnostic", "path": path.split(".")}


def bindings(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``{"target.path": selector}`` as a binding list."""
    return [{"target": target.split("."), "value": value} for target, value in spec.items()]


def is_(node: str, source: str, labels: list[str], field_: str | None = None) -> dict[str, Any]:
    """``in`` guard on one control."""
    return {
        "kind": "in",
        "labels": sorted(labels),
        "value": {"name": node, "source": source, "field": field_},
    }


def errored(node: str, codes: list[str] | None = None) -> dict[str, Any]:
    return is_(node, "error", codes or ERRORS)


def signalled(node: str, name: str, *labels: str) -> dict[str, Any]:
    return is_(node, "signal", list(labels), name)


def group(node: str, field_: str, *labels: str) -> dict[str, Any]:
    return is_(node, "group", list(labels), field_)


# --- nodes ---------------------------------------------------------------------------------


def step(
    name: str,
    *,
    input: Mapping[str, Any] = NULL,
    output: Mapping[str, Any] = NULL,
    reads: Mapping[str, Any] | None = None,
    writes: Mapping[str, Any] | None = None,
    timeout_ms: int = 10_000,
    attempts: int = 1,
) -> Node:
    return {
        "kind": "step",
        "name": name,
        "worker": f"test.{name}@1",
        "input": dict(input),
        "output": dict(output),
        "inputBindings": bindings(reads or {}),
        "writeBindings": bindings(writes or {}),
        "timeoutMs": timeout_ms,
        "attempts": attempts,
    }


def verifier(
    name: str,
    *,
    signals: Mapping[str, list[str]] | None = None,
    diagnostic: Mapping[str, Any] = NULL,
    **step_fields: Any,
) -> Node:
    node = step(name, **step_fields)
    node["kind"] = "verifier"
    declared = signals or {"verdict": VERDICT}
    node["signals"] = {key: sorted(value) for key, value in declared.items()}
    node["diagnostic"] = dict(diagnostic)
    return node


def seq(
    name: str, state_: Mapping[str, Any], *children: Node, promote: tuple[str, ...] = ()
) -> Node:
    return {
        "kind": "seq",
        "name": name,
        "state": dict(state_),
        "children": list(children),
        "promotedStatePaths": [path.split(".") for path in promote],
    }


def choice(
    name: str,
    state_: Mapping[str, Any],
    branches: list[tuple[dict[str, Any], Node]],
    otherwise: Node | None,
    *,
    promote: tuple[str, ...] = (),
) -> Node:
    return {
        "kind": "choice",
        "name": name,
        "state": dict(state_),
        "branches": [{"when": when, "node": node} for when, node in branches],
        "otherwise": otherwise,
        "promotedStatePaths": [path.split(".") for path in promote],
    }


def par(
    name: str,
    state_: Mapping[str, Any],
    branches: list[Node],
    join: dict[str, Any],
    *,
    promote: tuple[str, ...] = (),
) -> Node:
    return {
        "kind": "par",
        "name": name,
        "state": dict(state_),
        "branches": branches,
        "join": join,
        "promotedStatePaths": [path.split(".") for path in promote],
    }


def loop(
    name: str,
    state_: Mapping[str, Any],
    body: Node,
    *,
    until: dict[str, Any] | None,
    max_iterations: int,
    promote: tuple[str, ...] = (),
) -> Node:
    node = {
        "kind": "loop",
        "name": name,
        "state": dict(state_),
        "body": body,
        "maxIterations": max_iterations,
        "promotedStatePaths": [p.split(".") for p in promote],
    }
    if until is not None:
        node["until"] = until
    return node


def map_(
    name: str,
    state_: Mapping[str, Any],
    over: str,
    body: Node,
    *,
    max_items: int,
    promote: tuple[str, ...] = (),
) -> Node:
    return {
        "kind": "map",
        "name": name,
        "state": dict(state_),
        "over": state(over),
        "body": body,
        "maxItems": max_items,
        "promotedStatePaths": [path.split(".") for path in promote],
    }


def succeed(
    name: str, output: Mapping[str, Any] = NULL, reads: Mapping[str, Any] | None = None
) -> Node:
    return {
        "kind": "succeed",
        "name": name,
        "output": dict(output),
        "bindings": bindings(reads or {}),
    }


def fail(name: str, reason: str) -> Node:
    return {"kind": "fail", "name": name, "reason": reason}


def graph(initial_input: Mapping[str, Any], root: Node) -> dict[str, Any]:
    return {
        "profile": "openengine.graph.full/v1",
        "initialInput": dict(initial_input),
        "policy": {"policy": "policy.default@1", "default": "deny"},
        "root": root,
    }


def plan(callables: Mapping[str, str], **node_extra: Mapping[str, Any]) -> dict[str, Any]:
    """A python-harness plan: ``{node: worker function name in engine_workers}``."""
    nodes = {
        name: {
            "kind": "agent",
            "callable": f"engine_workers:{function}",
            **node_extra.get(name, {}),
        }
        for name, function in callables.items()
    }
    return {"harness": "python", "nodes": nodes}


Scenario = tuple[dict[str, Any], dict[str, Any]]
VALUE = rec(value=INT)


def value_step(name: str, **extra: Any) -> Node:
    """``{value}`` in from state, ``{value}`` out, written back to ``value``."""
    return step(
        name,
        input=VALUE,
        output=VALUE,
        reads={"value": state("value")},
        writes={"value": out(name, "value")},
        **extra,
    )


def value_result(name: str = "done") -> Node:
    return succeed(name, VALUE, {"value": state("value")})


# --- scenarios -----------------------------------------------------------------------------


def seq_graph() -> Scenario:
    """inc then double: value 3 gives 8."""
    root = seq("root", VALUE, value_step("inc"), value_step("double"), value_result())
    return graph(VALUE, root), plan({"inc": "inc", "double": "double"})


def choice_graph() -> Scenario:
    """``judge`` says verdict (even value) and size (>= 10). First true branch wins:
    accepted -> succeed; big -> fail ``second``; otherwise -> fail ``otherwise``."""
    judge = verifier(
        "judge",
        input=VALUE,
        reads={"value": state("value")},
        signals={"verdict": VERDICT, "size": ["big", "small"]},
    )
    route = choice(
        "route",
        VALUE,
        [
            (signalled("judge", "verdict", "accepted"), value_result("first")),
            (signalled("judge", "size", "big"), fail("second", "second")),
        ],
        fail("fallback", "otherwise"),
    )
    return graph(VALUE, seq("root", VALUE, judge, route)), plan({"judge": "judge"})


PAR_STATE = rec(value=INT, winner=opt(STR), left=opt(STR), right=opt(STR))


def _branch(name: str, target: str) -> Node:
    """A branch that completes only when its writer succeeds (an error ends it in ``fail``,
    a non-completion), so its promoted write is defined whenever the branch won."""
    writer = step(
        name,
        input=VALUE,
        output=rec(tag=STR),
        reads={"value": state("value")},
        writes={target: out(name, "tag")},
    )
    route = choice(
        f"{name}_route",
        PAR_STATE,
        [(errored(name), fail(f"{name}_failed", "branch_failed"))],
        step(f"{name}_ok"),
    )
    return seq(f"{name}_branch", PAR_STATE, writer, route, promote=(target,))


def _after_par(control: str, reached: str, done: Node) -> Node:
    return choice(
        "after",
        PAR_STATE,
        [(group("race", control, reached), done)],
        fail("unreachable", "unreachable"),
    )


def par_graph(join: dict[str, Any], names: list[str]) -> Scenario:
    """A par of guarded branches that all write ``winner`` (an any or quorum join), then a
    choice on ``joined``: reached reports the promoted winner, else ``unreachable``."""
    branches = [_branch(name, "winner") for name in names]
    root = seq(
        "root",
        PAR_STATE,
        par("race", PAR_STATE, branches, join, promote=("winner",)),
        _after_par(
            "joined", "reached", succeed("done", rec(winner=STR), {"winner": state("winner")})
        ),
    )
    return graph(VALUE, root), plan({n: "tag" for n in names} | {f"{n}_ok": "noop" for n in names})


def par_all_graph() -> Scenario:
    """Two guarded branches writing ``left`` and ``right``; the result has both."""
    branches = [_branch("left", "left"), _branch("right", "right")]
    done = succeed(
        "done", rec(left=STR, right=STR), {"left": state("left"), "right": state("right")}
    )
    root = seq(
        "root",
        PAR_STATE,
        par("race", PAR_STATE, branches, {"kind": "all"}, promote=("left", "right")),
        _after_par("joined", "reached", done),
    )
    names = ["left", "right"]
    return graph(VALUE, root), plan({n: "tag" for n in names} | {f"{n}_ok": "noop" for n in names})


def par_first_graph(names: list[str], candidate: str) -> Scenario:
    """Racing verifiers; a completion counts only if ``candidate`` accepted, then ``raced``
    routes: satisfied -> succeed, no_satisfier -> fail ``unreachable``."""
    racers = [
        verifier(name, input=VALUE, output=rec(tag=STR), reads={"value": state("value")})
        for name in names
    ]
    join = {"kind": "first", "when": signalled(candidate, "verdict", "accepted")}
    root = seq(
        "root",
        PAR_STATE,
        par("race", PAR_STATE, racers, join),
        _after_par("raced", "satisfied", succeed("done")),
    )
    return graph(VALUE, root), plan({name: "judge_tag" for name in names})


def loop_graph(max_iterations: int = 3) -> Scenario:
    """Each iteration increments ``value``; ``gate`` accepts once value >= 3."""
    body = seq(
        "iteration",
        VALUE,
        value_step("bump"),
        verifier("gate", input=VALUE, reads={"value": state("value")}),
        promote=("value",),
    )
    root = seq(
        "root",
        VALUE,
        loop(
            "refine",
            VALUE,
            body,
            until=signalled("gate", "verdict", "accepted"),
            max_iterations=max_iterations,
            promote=("value",),
        ),
        choice(
            "after",
            VALUE,
            [(group("refine", "terminated", "converged"), value_result())],
            fail("exhausted", "exhausted"),
        ),
    )
    return graph(VALUE, root), plan({"bump": "inc", "gate": "at_least_three"})


MAP_STATE = rec(items=arr(rec(n=INT)), results=opt(arr(INT)))


def map_graph(max_items: int = 4) -> Scenario:
    """Squares each item into ``results`` (indexed promotion); an item error routes to
    ``item_failed``, too many items to ``overflow``."""
    square = step(
        "square",
        input=rec(n=INT),
        output=rec(sq=INT),
        reads={"n": item("n")},
        writes={"results": out("square", "sq")},
    )
    root = seq(
        "root",
        MAP_STATE,
        map_("each", MAP_STATE, "items", square, max_items=max_items, promote=("results",)),
        choice(
            "after",
            MAP_STATE,
            [
                (
                    {
                        "kind": "k_of_map",
                        "count": 1,
                        "labels": ERRORS,
                        "value": {"name": "square", "source": "error", "field": None},
                    },
                    fail("item_failed", "item_failed"),
                ),
                (group("each", "overflow", "overflow"), fail("too_many", "overflow")),
            ],
            succeed("done", rec(results=arr(INT)), {"results": state("results")}),
        ),
    )
    return graph(MAP_STATE, root), plan({"square": "square"})


def map_terminal_graph() -> Scenario:
    """Each item is checked; a negative item ends the whole graph in ``bad_item`` and voids
    the other items."""
    body = seq(
        "item",
        MAP_STATE,
        verifier(
            "check", input=rec(n=INT), reads={"n": item("n")}, signals={"sign": ["neg", "pos"]}
        ),
        choice(
            "item_route",
            MAP_STATE,
            [(signalled("check", "sign", "neg"), fail("bad", "bad_item"))],
            step("settle", input=rec(n=INT), reads={"n": item("n")}),
        ),
    )
    root = seq(
        "root", MAP_STATE, map_("each", MAP_STATE, "items", body, max_items=8), succeed("done")
    )
    return graph(MAP_STATE, root), plan({"check": "sign", "settle": "settle"})


REVIEW_STATE = rec(value=INT, verdict=opt(enum(*VERDICT)), note=opt(STR), score=opt(INT))


def verifier_writes_graph() -> Scenario:
    """A verifier's signal, diagnostic and output written to state and reported."""
    review = verifier(
        "review",
        input=VALUE,
        output=VALUE,
        reads={"value": state("value")},
        diagnostic=rec(note=STR, score=INT),
        writes={
            "verdict": signal("review", "verdict"),
            "note": diag("review", "note"),
            "score": diag("review", "score"),
            "value": out("review", "value"),
        },
    )
    report = succeed(
        "done",
        rec(value=INT, verdict=enum(*VERDICT), note=STR, score=INT),
        {
            "value": state("value"),
            "verdict": state("verdict"),
            "note": state("note"),
            "score": state("score"),
        },
    )
    root = seq(
        "root",
        REVIEW_STATE,
        review,
        choice(
            "after",
            REVIEW_STATE,
            [(errored("review"), fail("review_failed", "review_failed"))],
            report,
        ),
    )
    return graph(VALUE, root), plan({"review": "review"})


def guarded_graph(
    function: str, *, attempts: int = 1, timeout_ms: int = 10_000, **binding: Any
) -> Scenario:
    """One step ``work`` whose error code becomes the fail reason; success reports value."""
    work = value_step("work", attempts=attempts, timeout_ms=timeout_ms)
    route = choice(
        "route",
        VALUE,
        [(errored("work", [code]), fail(f"on_{code}", code)) for code in ERRORS],
        value_result(),
    )
    return graph(VALUE, seq("root", VALUE, work, route)), plan({"work": function}, work=binding)


def single_step_graph(function: str, *, timeout_ms: int = 60_000, **binding: Any) -> Scenario:
    """One step and succeed with its value (no error routing)."""
    root = seq("root", VALUE, value_step("work", timeout_ms=timeout_ms), value_result())
    return graph(VALUE, root), plan({"work": function}, work=binding)


RESUME_STATE = rec(
    value=INT, items=arr(rec(n=INT)), results=opt(arr(INT)), left=opt(STR), right=opt(STR)
)


def resume_graph() -> Scenario:
    """Some of everything that can be in flight when a controller dies: a step, an any-par
    of two (the loser is voided), a map, then a loop of two iterations (bump,
    gate), every executable with attempts to spare for the executions a dead controller
    leaves behind. The result does not depend on which racer wins."""
    spare: dict[str, Any] = {"attempts": 10}
    tagger: dict[str, Any] = {
        "input": VALUE,
        "output": rec(tag=STR),
        "reads": {"value": state("value")},
    }
    square = step(
        "square",
        input=rec(n=INT),
        output=rec(sq=INT),
        reads={"n": item("n")},
        writes={"results": out("square", "sq")},
        **spare,
    )
    body = seq(
        "iteration",
        RESUME_STATE,
        value_step("bump", **spare),
        verifier("gate", input=VALUE, reads={"value": state("value")}, **spare),
        promote=("value",),
    )
    report = succeed(
        "done",
        rec(value=INT, results=arr(INT)),
        {"value": state("value"), "results": state("results")},
    )
    root = seq(
        "root",
        RESUME_STATE,
        value_step("prep", **spare),
        par(
            "fan",
            RESUME_STATE,
            [step("left", **tagger, **spare), step("right", **tagger, **spare)],
            {"kind": "any"},
        ),
        map_("each", RESUME_STATE, "items", square, max_items=4, promote=("results",)),
        loop(
            "refine",
            RESUME_STATE,
            body,
            until=signalled("gate", "verdict", "accepted"),
            max_iterations=4,
            promote=("value",),
        ),
        choice(
            "after",
            RESUME_STATE,
            [
                (
                    {
                        "kind": "k_of_map",
                        "count": 1,
                        "labels": ERRORS,
                        "value": {"name": "square", "source": "error", "field": None},
                    },
                    fail("item_failed", "item_failed"),
                )
            ],
            report,
        ),
    )
    callables = {
        "prep": "inc",
        "left": "tag",
        "right": "tag",
        "square": "square",
        "bump": "inc",
        "gate": "at_least_three",
    }
    return graph(RESUME_STATE, root), plan(callables)


def spin_graph(iterations: int = 100, rounds: int = 1) -> Scenario:
    """A loop with no ``until`` over one quick step (``rounds`` > 1: that loop again inside
    an outer one, for ``iterations * rounds`` steps): the controller is nearly always
    between reading the run and recording the next dispatch."""
    body = seq("iteration", VALUE, value_step("bump"), promote=("value",))
    spin = loop("spin", VALUE, body, until=None, max_iterations=iterations, promote=("value",))
    if rounds > 1:
        spin = loop(
            "rounds",
            VALUE,
            seq("round", VALUE, spin, promote=("value",)),
            until=None,
            max_iterations=rounds,
            promote=("value",),
        )
    root = seq("root", VALUE, spin, value_result())
    return graph(VALUE, root), plan({"bump": "inc"})


BOOL = {"kind": "boolean"}
NUMBER = {"kind": "number"}
ALL_STATE = rec(
    count=INT,
    enabled=BOOL,
    items=arr(rec(text=STR)),
    text=STR,
    nothing=opt(NULL),
    ratio=opt(NUMBER),
    verdict=opt(enum(*VERDICT)),
    lengths=opt(arr(INT)),
)


def every_kind_graph() -> Scenario:
    """``full-all-nodes.json`` (which admission rejects as it is, for the reasons
    ``test_engine_fixture`` gives) repaired so that it passes admission and runs: the same
    initial input (items are records, since an item selector reads a field), the same
    node names, but well-typed bindings, branches that route instead of ending the graph at
    the first choice, and executables inside the joins, the loop and the map."""
    text_in: dict[str, Any] = {"input": rec(text=STR), "reads": {"text": state("text")}}
    work = step(
        "work", output=rec(text=STR), writes={"text": out("work", "text")}, attempts=2, **text_in
    )
    verify = verifier(
        "verify",
        output=rec(ok=BOOL),
        diagnostic=rec(),
        writes={"verdict": signal("verify", "verdict")},
        **text_in,
    )
    choose = choice(
        "choose",
        ALL_STATE,
        [
            (
                {
                    "kind": "k_of_n",
                    "count": 1,
                    "labels": ERRORS,
                    "values": [
                        {"name": "work", "source": "error", "field": None},
                        {"name": "verify", "source": "error", "field": None},
                    ],
                },
                fail("failed", "errored"),
            ),
            (
                {"kind": "not", "guard": signalled("verify", "verdict", "accepted")},
                fail("choice3", "rejected"),
            ),
        ],
        step("proceed"),
    )
    first_when = signalled("joinFirstLeft", "verdict", "accepted")
    joins = [
        par("joinAll", ALL_STATE, [step("joinAllLeft"), step("joinAllRight")], {"kind": "all"}),
        par("joinAny", ALL_STATE, [step("joinAnyLeft"), step("joinAnyRight")], {"kind": "any"}),
        par(
            "joinQuorum",
            ALL_STATE,
            [step("joinQuorumLeft"), step("joinQuorumRight")],
            {"kind": "quorum", "count": 1},
        ),
        par(
            "joinFirst",
            ALL_STATE,
            [verifier("joinFirstLeft"), step("joinFirstRight")],
            {"kind": "first", "when": first_when},
        ),
    ]
    count: dict[str, Any] = {"input": rec(count=INT), "reads": {"count": state("count")}}
    body = seq(
        "loopBody",
        ALL_STATE,
        step(
            "loopStep", output=rec(count=INT), writes={"count": out("loopStep", "count")}, **count
        ),
        verifier("loopCheck", **count),
        promote=("count",),
    )
    repeat = loop(
        "repeat",
        ALL_STATE,
        body,
        until=signalled("loopCheck", "verdict", "accepted"),
        max_iterations=3,
        promote=("count",),
    )
    each = map_(
        "each",
        ALL_STATE,
        "items",
        step(
            "mapBody",
            input=rec(text=STR),
            output=rec(length=INT),
            reads={"text": item("text")},
            writes={"lengths": out("mapBody", "length")},
        ),
        max_items=3,
        promote=("lengths",),
    )
    complete = {
        "kind": "all",
        "guards": [
            group("joinAll", "joined", "reached"),
            {
                "kind": "any",
                "guards": [
                    group("joinAny", "joined", "reached"),
                    group("joinQuorum", "joined", "reached"),
                ],
            },
            group("joinFirst", "raced", "satisfied"),
            group("repeat", "terminated", "converged"),
            group("each", "overflow", "ok"),
        ],
    }
    finish = choice(
        "finish",
        ALL_STATE,
        [
            (
                {
                    "kind": "k_of_map",
                    "count": 1,
                    "labels": ERRORS,
                    "value": {"name": "mapBody", "source": "error", "field": None},
                },
                fail("mapFailed", "item_failed"),
            ),
            (
                complete,
                succeed(
                    "done",
                    rec(text=STR, count=INT, lengths=arr(INT)),
                    {"text": state("text"), "count": state("count"), "lengths": state("lengths")},
                ),
            ),
        ],
        fail("incomplete", "incomplete"),
    )
    root = seq("root", ALL_STATE, work, verify, choose, *joins, repeat, each, finish)
    noops = [
        "proceed",
        "joinAllLeft",
        "joinAllRight",
        "joinAnyLeft",
        "joinAnyRight",
        "joinQuorumLeft",
        "joinQuorumRight",
        "joinFirstRight",
    ]
    callables = {
        "work": "upper",
        "verify": "is_upper",
        "joinFirstLeft": "accept",
        "loopStep": "count_up",
        "loopCheck": "count_check",
        "mapBody": "length",
    }
    return graph(ALL_STATE, root), plan(callables | {name: "noop" for name in noops})
