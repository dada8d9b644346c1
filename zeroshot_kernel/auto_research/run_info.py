"""What a view needs to know about a run beyond its events: read once from the admitted
submission, so a monitor on a run started elsewhere (the CLI, another machine) knows the
same things as the notebook that launched it. Kept out of the widgets so the Jupyter
server extension, which runs without a kernel, reads the same facts.

Example::

    info = RunInfo.load(client, run_id, client.workspace)
    info.round_limit, info.metric
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zeroshot_kernel.auto_research.task import TaskError, resolve_task
from zeroshot_kernel.ledger.reader import RunReader

ROUNDS_LOOP = "rounds"
"""The auto-research template's loop of reviewed rounds."""


@dataclass(frozen=True)
class RunInfo:
    title: str
    task: str
    round_limit: int | None
    """The rounds loop's ``maxIterations``; None for runs that are not auto-research."""
    metric: str
    """The task's metric name when its folder is reachable from here, else ``metric``."""
    in_kernel: bool
    """A python worker lives in ``__main__``: the run depends on this kernel."""

    @classmethod
    def load(cls, ledger: RunReader, run_id: str, workspace: Path) -> RunInfo:
        """Read the admitted submission; task folders resolve inside ``workspace``."""
        admitted = ledger.admitted(run_id)
        initial = admitted.get("initialInput")
        task = str(initial.get("task", "")) if isinstance(initial, dict) else ""
        nodes = admitted.get("runtime", {}).get("nodes", {})
        return cls(
            title=str(admitted.get("title", "")),
            task=task,
            round_limit=_round_limit(admitted.get("graph", {}).get("root", {})),
            metric=_metric(task, workspace),
            in_kernel=any(
                str(b.get("callable") or "").startswith("__main__:")
                for b in nodes.values()
                if isinstance(b, dict)
            ),
        )


def _round_limit(root: dict[str, Any]) -> int | None:
    for node in _nodes(root):
        if node.get("kind") == "loop" and node.get("name") == ROUNDS_LOOP:
            return int(node["maxIterations"])
    return None


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    children: list[Any] = [*node.get("children", ()), *node.get("branches", ())]
    children += [node[key] for key in ("body", "otherwise") if isinstance(node.get(key), dict)]
    for child in children:
        child = child.get("node", child) if child.get("kind") is None else child
        yield from _nodes(child)


def _metric(task: str, workspace: Path) -> str:
    if not task:
        return "metric"
    try:
        return resolve_task(task, workspace).spec.metric
    except (TaskError, OSError):
        return "metric"
