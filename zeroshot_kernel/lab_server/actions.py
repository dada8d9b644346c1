"""Stop and Continue from the Lab front end: the same acts as the widget monitor's buttons
(``Run.stop()``; the auto-research template with :func:`continuation_options`)."""

from __future__ import annotations

from typing import Any

from zeroshot_kernel.auto_research.continuation import continuation_options, continued_by
from zeroshot_kernel.auto_research.run_info import RunInfo
from zeroshot_kernel.auto_research.run_words import STOP_MESSAGES
from zeroshot_kernel.auto_research.views import load_research_view
from zeroshot_kernel.client import Client
from zeroshot_kernel.exceptions import Refused, ZeroshotError
from zeroshot_kernel.ledger.events import was_stopped
from zeroshot_kernel.templates import expand_template


class NotContinuable(Refused):
    """Continue asked of a run that cannot be continued (HTTP 409)."""


def stop_run(client: Client, run_id: str) -> dict[str, Any]:
    """``ActionReply``: stop the run (one atomic close as ``failed/force_stopped``)."""
    outcome = client.run(run_id).stop()
    return {"run_id": run_id, "message": STOP_MESSAGES[outcome]}


def continue_run(client: Client, run_id: str) -> dict[str, Any]:
    """``ActionReply`` naming the new run: the stopped run's study carried on for the
    rounds it had left (same task, harness, provider and model), as the monitor's
    Continue and ``zeroshot research run TASK --study STUDY`` would."""
    info = RunInfo.load(client, run_id, client.workspace)  # RunNotFound first
    run = client.run(run_id)
    if info.round_limit is None or not was_stopped(run.terminal):
        raise NotContinuable("only a stopped auto-research run can be continued")
    after = continued_by(client, run_id)
    if after is not None:
        raise NotContinuable(f"the study was already continued by {after}")
    left = max(info.round_limit - len(load_research_view(client, run_id).rounds), 1)
    try:
        options = continuation_options(client.admitted(run_id), iterations=left)
        expansion = expand_template("auto-research", options)
        new = client.submit(
            expansion.graph,
            input=expansion.input,
            runtime=expansion.runtime,
            title=info.title or f"auto-research {options.task}",
        )
    except (ZeroshotError, ValueError) as problem:  # admission, study, ledger refusals
        raise NotContinuable(f"could not continue: {problem}") from None
    plural = "s" if left != 1 else ""
    return {
        "run_id": new.id,
        "message": f"continued study {options.study} as {new.id} (after {run_id}, "
        f"{left} round{plural})",
    }
