"""The ``single-worker`` template: one agent does the task; its error fails the run."""

from __future__ import annotations

from zeroshot_kernel.templates.build import (
    Doc,
    branch,
    choice,
    errored,
    fail,
    from_state,
    graph,
    record,
    seq,
    step,
    string,
    succeed,
)

WORKER_INSTRUCTIONS = (
    "Complete the requested task in the shared workspace. Follow the repository's own "
    "guidance, keep the change focused, and run the checks that prove it."
)


def single_worker_graph() -> Doc:
    state = record({"task": string()})
    worker = step(
        "worker",
        "builtin.agent.worker@1",
        input=state,
        output={"kind": "null"},
        input_bindings=[from_state(["task"])],
        write_bindings=[],
        instructions=WORKER_INSTRUCTIONS,
    )
    route = choice(
        "worker_result",
        state,
        [branch(errored("worker"), fail("worker_failed"))],
        succeed("done", {"kind": "null"}, []),
    )
    return graph(state, seq("run", state, [worker, route]))
