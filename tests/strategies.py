"""Hypothesis strategies for syntactically valid GraphSpec documents (wire form)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

NAMES = st.from_regex(r"[a-z][a-zA-Z0-9_]{0,6}", fullmatch=True)
LABELS = st.lists(
    st.sampled_from(["accepted", "rejected", "retry", "x1", "y_2"]),
    min_size=1,
    max_size=4,
    unique=True,
)
PATHS = st.lists(NAMES, min_size=1, max_size=3)
WORKERS = st.builds(lambda n, v: f"{n}@{v}", NAMES, st.integers(1, 99))
POSITIVE = st.integers(1, 1000)


def payload_types(depth: int = 2) -> st.SearchStrategy[dict[str, Any]]:
    primitive = st.sampled_from(["null", "boolean", "integer", "number", "string"]).map(
        lambda kind: {"kind": kind}
    )
    enum = LABELS.map(lambda values: {"kind": "enum", "values": values})
    if depth == 0:
        return st.one_of(primitive, enum)
    inner = payload_types(depth - 1)
    field = st.fixed_dictionaries({"type": inner, "required": st.booleans()})
    record = st.dictionaries(NAMES, field, max_size=3).map(
        lambda fields: {"kind": "record", "fields": fields}
    )
    array = inner.map(lambda items: {"kind": "array", "items": items})
    return st.one_of(primitive, enum, record, array)


def control_selectors() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda n, f: {"name": n, "source": "signal", "field": f}, NAMES, NAMES),
        st.builds(lambda n: {"name": n, "source": "error", "field": None}, NAMES),
        st.builds(lambda n: {"name": n, "source": "group", "field": "joined"}, NAMES),
    )


def guards() -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.one_of(
        st.builds(
            lambda v, ls: {"kind": "in", "value": v, "labels": ls}, control_selectors(), LABELS
        ),
        st.builds(
            lambda c, vs, ls: {"kind": "k_of_n", "count": c, "values": vs, "labels": ls},
            st.integers(1, 3),
            st.lists(control_selectors(), min_size=1, max_size=3),
            LABELS,
        ),
        st.builds(
            lambda c, v, ls: {"kind": "k_of_map", "count": c, "value": v, "labels": ls},
            st.integers(1, 3),
            control_selectors(),
            LABELS,
        ),
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.builds(
                lambda gs: {"kind": "all", "guards": gs}, st.lists(inner, min_size=1, max_size=3)
            ),
            st.builds(
                lambda gs: {"kind": "any", "guards": gs}, st.lists(inner, min_size=1, max_size=3)
            ),
            st.builds(lambda g: {"kind": "not", "guard": g}, inner),
        ),
        max_leaves=5,
    )


def input_bindings() -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(
        st.builds(
            lambda t, s, p: {"target": t, "value": {"source": s, "path": p}},
            PATHS,
            st.sampled_from(["state", "item"]),
            PATHS,
        ),
        max_size=3,
    )


def write_bindings() -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(
        st.builds(
            lambda t, n, c, p: {"target": t, "value": {"node": n, "channel": c, "path": p}},
            PATHS,
            NAMES,
            st.sampled_from(["out", "signal", "diagnostic"]),
            PATHS,
        ),
        max_size=3,
    )


def _executable(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    base: dict[str, st.SearchStrategy[Any]] = {
        "kind": st.just(kind),
        "name": NAMES,
        "worker": WORKERS,
        "input": payload_types(1),
        "output": payload_types(1),
        "inputBindings": input_bindings(),
        "writeBindings": write_bindings(),
        "timeoutMs": POSITIVE,
        "attempts": st.integers(1, 5),
    }
    if kind == "verifier":
        base["signals"] = st.dictionaries(NAMES, LABELS, max_size=2)
        base["diagnostic"] = payload_types(1)
    return st.fixed_dictionaries(
        base,
        optional={
            "instructions": st.text(
                st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\0"),
                min_size=1,
                max_size=40,
            ).filter(str.strip)
        },
    )


def _terminal() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.fixed_dictionaries(
            {
                "kind": st.just("succeed"),
                "name": NAMES,
                "output": payload_types(1),
                "bindings": input_bindings(),
            }
        ),
        st.fixed_dictionaries(
            {
                "kind": st.just("fail"),
                "name": NAMES,
                "reason": NAMES.filter(lambda n: n != "unhandled"),
            }
        ),
    )


def _groups(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    common = {
        "name": NAMES,
        "state": payload_types(1),
        "promotedStatePaths": st.lists(PATHS, max_size=3),
    }
    children = st.lists(inner, min_size=1, max_size=3)
    join = st.one_of(
        st.just({"kind": "all"}),
        st.just({"kind": "any"}),
        st.builds(lambda c: {"kind": "quorum", "count": c}, st.integers(1, 3)),
        st.builds(lambda g: {"kind": "first", "when": g}, guards()),
    )
    return st.one_of(
        st.fixed_dictionaries({"kind": st.just("seq"), "children": children, **common}),
        st.fixed_dictionaries(
            {
                "kind": st.just("choice"),
                **common,
                "branches": st.lists(
                    st.fixed_dictionaries({"when": guards(), "node": inner}), min_size=1, max_size=3
                ),
                "otherwise": st.one_of(st.none(), inner),
            }
        ),
        st.fixed_dictionaries(
            {"kind": st.just("par"), "branches": children, "join": join, **common}
        ),
        st.fixed_dictionaries(
            {"kind": st.just("loop"), "body": inner, "maxIterations": st.integers(1, 10), **common},
            optional={"until": guards()},
        ),
        st.fixed_dictionaries(
            {
                "kind": st.just("map"),
                "body": inner,
                "over": st.builds(lambda p: {"source": "state", "path": p}, PATHS),
                "maxItems": st.integers(1, 10),
                **common,
            }
        ),
    )


def graph_nodes() -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.one_of(_executable("step"), _executable("verifier"), _terminal())
    return st.recursive(leaf, _groups, max_leaves=8)


def _unique_names(node: dict[str, Any], counter: list[int]) -> dict[str, Any]:
    """Node names are unique in any graph that can be compiled; make them so."""
    node = dict(node)
    counter[0] += 1
    node["name"] = f"{node['name']}_{counter[0]}"
    for key in ("children", "branches"):
        if key in node:
            node[key] = [
                {**b, "node": _unique_names(b["node"], counter)}
                if "when" in b
                else _unique_names(b, counter)
                for b in node[key]
            ]
    for key in ("body", "otherwise"):
        if node.get(key) is not None:
            node[key] = _unique_names(node[key], counter)
    return node


def graphs() -> st.SearchStrategy[dict[str, Any]]:
    """Valid ``openengine.graph.full/v1`` documents (syntax only; not verified), with
    unique node names."""
    return st.fixed_dictionaries(
        {
            "profile": st.just("openengine.graph.full/v1"),
            "initialInput": payload_types(2),
            "policy": st.builds(lambda ref: {"policy": ref, "default": "deny"}, WORKERS),
            "root": graph_nodes().map(lambda root: _unique_names(root, [0])),
        }
    )


def with_bounds(graph: dict[str, Any], executions: int = 1) -> dict[str, Any]:
    """Attach (unverified) bounds so the document is a CompiledGraphIr for identity tests."""
    return {
        **graph,
        "bounds": {
            "termination": {"kind": "acyclic", "order": ["root"]},
            "maxNodeExecutions": executions,
            "peakConcurrency": 1,
            "attemptsPerNode": {},
        },
    }
