"""The embedded research agents and the trusted research steps, each call timed from
inside its worker process (B4).

What a round spends outside these intervals is the engine's: dispatch, the ledger, the
harness and its process hand-offs. Each call appends ``{node, start, end}`` (the shared
monotonic clock) to ``agent_times.jsonl`` in the workspace.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from zeroshot_kernel.auto_research import local_agents, trusted_nodes
from zeroshot_kernel.workers import WorkerContext

TIMES_FILE = "agent_times.jsonl"
Reply = TypeVar("Reply")


def _timed(
    agent: Callable[[dict[str, Any], WorkerContext], Reply],
) -> Callable[[dict[str, Any], WorkerContext], Reply]:
    def call(payload: dict[str, Any], context: WorkerContext) -> Reply:
        start = time.monotonic()
        try:
            return agent(payload, context)
        finally:
            line = {"node": context.node, "start": start, "end": time.monotonic()}
            with (Path(context.workspace) / TIMES_FILE).open("a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")

    return call


scout_exploration = _timed(local_agents.scout_exploration)
scout_synthesis = _timed(local_agents.scout_synthesis)
scout_challenge = _timed(local_agents.scout_challenge)
researcher = _timed(local_agents.researcher)
reviewer = _timed(local_agents.reviewer)
measure = _timed(trusted_nodes.measure)
adopt = _timed(trusted_nodes.adopt)
