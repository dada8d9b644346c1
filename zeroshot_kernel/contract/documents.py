"""Walking a graph *document* (the wire form as plain dicts) without parsing it.

Templates, outlines and ledger readers look at stored graphs that were admitted long ago;
they only need the tree's shape, so they walk the JSON itself.

>>> leaf = {"kind": "succeed", "name": "done"}
>>> [n["name"] for n in node_documents({"kind": "seq", "name": "run", "children": [leaf]})]
['run', 'done']
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def child_documents(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The direct children of a node document, in authored order."""
    kind = node["kind"]
    if kind == "seq":
        return list(node["children"])
    if kind == "par":
        return list(node["branches"])
    if kind == "choice":
        children = [branch["node"] for branch in node["branches"]]
        return children + ([node["otherwise"]] if node.get("otherwise") is not None else [])
    if kind in ("loop", "map"):
        return [node["body"]]
    return []


def node_documents(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node document under ``node`` (itself first), depth first."""
    yield node
    for child in child_documents(node):
        yield from node_documents(child)
