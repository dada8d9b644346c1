"""Small builders for ledger events, shared by the ledger tests."""

from __future__ import annotations

from typing import Any

from zeroshot_kernel.contract.outcome import VerifiedOutcome, error
from zeroshot_kernel.ledger.events import (
    Completion,
    ControllerAttached,
    ExecutionReference,
    ExecutionVoided,
    FailedResult,
    ForceStopRequested,
    LogStream,
    NodeCompleted,
    NodeStarted,
    Occurrence,
    RunEvent,
    RunStarted,
    SafeLog,
    SucceededResult,
    Terminal,
)

ADMITTED: dict[str, Any] = {
    "graph": {"profile": "openengine.graph.full/v1", "root": {"kind": "step", "name": "worker"}},
    "initialInput": {"task": "count the primes below 100"},
    "runtime": {"harness": "local", "nodes": {"worker": {"kind": "agent"}}},
}


def ref(run_id: str, n: int = 1, node: str = "worker") -> ExecutionReference:
    return ExecutionReference(
        run_id=run_id, node=node, node_instance=f"{node}#{n}", execution=f"e{n}"
    )


def started(reference: ExecutionReference, attempt: int = 1) -> NodeStarted:
    return NodeStarted(
        reference=reference,
        occurrence=Occurrence(node=reference.node),
        attempt=attempt,
        input={"task": "t"},
    )


def completed(reference: ExecutionReference, output: Any = None) -> NodeCompleted:
    outcome = VerifiedOutcome(status="verified", output=output)
    return NodeCompleted(completion=Completion(reference=reference, outcome=outcome))


def crashed(reference: ExecutionReference) -> NodeCompleted:
    return NodeCompleted(completion=Completion(reference=reference, outcome=error("crash")))


def voided(reference: ExecutionReference) -> ExecutionVoided:
    return ExecutionVoided(reference=reference, reason="parallel_join")


def log(line: str, execution: str | None = None, stream: LogStream = "output") -> SafeLog:
    return SafeLog(execution=execution, stream=stream, line=line)


def attached(controller: str = "controller-1", resumed: bool = False) -> ControllerAttached:
    return ControllerAttached(controller=controller, resumed=resumed)


def succeeded(output: Any = None) -> Terminal:
    return Terminal(result=SucceededResult(status="succeeded", output=output))


def failed(reason: str = "force_stopped") -> Terminal:
    return Terminal(result=FailedResult(status="failed", reason=reason))


def one_of_each_kind(run_id: str) -> list[RunEvent]:
    """A legal history that uses every event kind once or more."""
    first, second = ref(run_id, 1), ref(run_id, 2)
    return [
        attached(),
        RunStarted(),
        started(first),
        started(second),
        log("working", first.execution),
        completed(first, {"answer": 25}),
        voided(second),
        ForceStopRequested(),
        succeeded({"answer": 25}),
    ]
