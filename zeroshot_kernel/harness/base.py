"""The harness interface: one execution request in, one typed result out.

The controller owns timeouts and cancellation: it cancels ``execute`` when the node's
``timeoutMs`` passes or the run is stopped, and a harness must then release everything
it started (kill the whole process group of an agent CLI, a worker process, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from zeroshot_kernel.contract.graph import StepNode, VerifierNode
from zeroshot_kernel.contract.outcome import WorkerOutcome
from zeroshot_kernel.harness.plan import (
    AgentBinding,
    GitDeliveryBinding,
    RuntimePlan,
    TrustedBinding,
)
from zeroshot_kernel.ledger.events import LogStream, RunEvent, Usage
from zeroshot_kernel.sandbox import Containment

LogSink = Callable[[LogStream, str], None]


@dataclass(frozen=True)
class ExecutionRequest:
    """Everything a harness needs to run one dispatch of one executable node."""

    run_id: str
    node: StepNode | VerifierNode
    execution: str
    node_instance: str
    attempt: int
    input: Any
    binding: AgentBinding | GitDeliveryBinding | TrustedBinding
    plan: RuntimePlan
    workspace: Path
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Values of the declared environment names and connections: passed to the worker,
    never logged or recorded."""
    log: LogSink = field(default=lambda stream, line: None, repr=False)
    run_input: Any = None
    """The run's initial input, as admitted."""
    events: Callable[[], list[RunEvent]] = field(default=list, repr=False)
    """Reads the run's recorded events so far (embedded agents derive context from them)."""
    brief: str = ""
    """Context trusted code adds to an LLM agent's prompt after its input (see
    :mod:`zeroshot_kernel.harness.roles`); empty for most nodes."""
    granted_commands: tuple[str, ...] = ()
    """Commands the turn's role lets a read-only agent run besides inspecting files and git
    (a software-change reviewer: the run's declared checks)."""
    containment: Containment = field(default_factory=Containment)
    """How processes running model-written code are boxed (the run's ``sandbox`` mode,
    the user's workspace and the ledger file no box may see)."""

    @property
    def harness(self) -> str:
        if isinstance(self.binding, GitDeliveryBinding):
            return "git_delivery"
        if isinstance(self.binding, TrustedBinding):
            return "trusted"
        return self.binding.harness or self.plan.harness


@dataclass(frozen=True)
class HarnessResult:
    """A settled execution. ``detail`` explains an error outcome to a person."""

    outcome: WorkerOutcome
    detail: str | None = None
    usage: Usage | None = None


class Harness(Protocol):
    """Runs executions of one harness kind for one controller."""

    async def execute(self, request: ExecutionRequest) -> HarnessResult:
        """Run one execution to its outcome; must clean up when cancelled."""
        ...

    async def close(self) -> None:
        """Release pooled processes and sessions when the run ends."""
        ...
