"""The controller: drives one admitted run to its terminal, recording every fact.

Each cycle reduces the recorded history to decisions and takes the first that applies:
voids (cancel, then record), the terminal (once nothing is active), dispatches (record
``node_started``, then start), else wait for a completion or a stop request. Whatever the
controller has not recorded has not happened: if it dies, ``resume`` replays the ledger.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from zeroshot_kernel.contract.graph import CompiledGraphIr, StepNode, VerifierNode
from zeroshot_kernel.contract.outcome import ErrorOutcome, WorkerOutcome, error
from zeroshot_kernel.engine.decisions import Decisions, Dispatch
from zeroshot_kernel.engine.history import HistoryBook
from zeroshot_kernel.engine.outcomes import check_outcome
from zeroshot_kernel.engine.owner import new_owner_id
from zeroshot_kernel.engine.redaction import Redactor, environment_secrets
from zeroshot_kernel.engine.reducer import reduce
from zeroshot_kernel.exceptions import Unavailable
from zeroshot_kernel.harness.base import ExecutionRequest, Harness, HarnessResult
from zeroshot_kernel.harness.plan import (
    KNOWN_CONNECTIONS,
    OPTIONAL_KEY_HARNESSES,
    NodeBinding,
    RuntimePlan,
)
from zeroshot_kernel.harness.registry import HarnessUnavailable, harness_for
from zeroshot_kernel.ledger import EventRejected, LeaseNotHeld, Ledger
from zeroshot_kernel.ledger import state as ledger_state
from zeroshot_kernel.ledger.events import (
    Completion,
    ControllerAttached,
    ExecutionReference,
    ExecutionVoided,
    FailedResult,
    LogStream,
    NodeCompleted,
    NodeStarted,
    RunEvent,
    RunStarted,
    SafeLog,
    Terminal,
    TerminalResult,
)
from zeroshot_kernel.sandbox import Containment, user_root

log = logging.getLogger(__name__)
_OUTCOME = TypeAdapter[WorkerOutcome](WorkerOutcome)

LEASE_TTL_S = 15.0
HEARTBEAT_S = 3.0
STOP_POLL_S = 0.1


class LeaseUnavailable(Unavailable):
    """Another live controller holds the run's lease."""


# Not a ZeroshotError on purpose: internal control flow that unwinds the controller's
# loop when a signal arrives; it never leaves the controller, so no caller handles it.
# Not a ZeroshotError on purpose: internal control flow that unwinds the controller's
# loop when a signal arrives; it never leaves the controller, so no caller handles it.
class Interrupted(Exception):
    """The controller was asked to stop (a signal); the run stays unfinished."""


class LeaseLost(Unavailable):
    """This controller's lease expired and may have been taken over: it must stop writing."""


@dataclass
class _Running:
    reference: ExecutionReference
    node: StepNode | VerifierNode
    task: asyncio.Task[HarnessResult]


@dataclass
class _Logs:
    """Lines workers printed, waiting to be recorded with the next batch."""

    redactor: Redactor
    pending: list[SafeLog] = field(default_factory=list)

    def sink(self, execution: str) -> Any:
        def write(stream: LogStream, line: str) -> None:
            self.pending.append(
                SafeLog(execution=execution, stream=stream, line=self.redactor.safe_line(line))
            )

        return write

    def drain(self) -> list[SafeLog]:
        drained, self.pending = self.pending, []
        return drained


class Controller:
    """Runs one admitted run; construct, then ``await controller.run()``."""

    def __init__(
        self,
        ledger: Ledger,
        run_id: str,
        *,
        workspace: Path,
        in_process: bool = False,
        owner: str | None = None,
        replacing: str | None = None,
        harnesses: Mapping[str, Harness] | None = None,
        lease_ttl_s: float = LEASE_TTL_S,
        heartbeat_s: float = HEARTBEAT_S,
    ) -> None:
        self.ledger = ledger
        self.run_id = run_id
        self.workspace = workspace
        self.owner = owner or new_owner_id()
        self._replacing = replacing
        self._in_process = in_process
        self._interrupted: str | None = None
        self._interrupt = asyncio.Event()
        self._harnesses: dict[str, Harness] = dict(harnesses or {})
        self._lease_ttl_s = lease_ttl_s
        self._heartbeat_s = heartbeat_s
        self._running: dict[str, _Running] = {}
        self._lease_lost = asyncio.Event()
        self._events: list[RunEvent] = []
        self._events_cursor: str | None = None
        self._events_lock = threading.Lock()
        self._pending: list[RunEvent] = []
        """Settled completions not yet recorded: they go in with the next batch (a step's
        completion and the next step's dispatch share one commit)."""
        self._book = HistoryBook()
        """Rebuilds only the executions a cycle changed, so a cycle's cost follows what
        happened since the last one, not the whole history."""
        self._reduced: tuple[ledger_state.RunSnapshot, Decisions] | None = None
        """The last snapshot reduced and what it decided."""

    def interrupt(self, why: str) -> None:
        """Stop driving the run without ending it (a SIGTERM): the running executions are
        cancelled (their workers stopped), the interruption is recorded, and the lease is
        released so that ``zeroshot resume`` can take over at once. Call it from the
        controller's event loop (a signal handler of the loop)."""
        self._interrupted = why
        self._interrupt.set()

    async def run(self) -> TerminalResult | None:
        """Drive the run to its terminal; returns it (None if the lease was lost or the
        controller was interrupted)."""
        if not self.ledger.acquire_lease(
            self.run_id, self.owner, self._lease_ttl_s, replacing=self._replacing
        ):
            raise LeaseUnavailable(f"run {self.run_id} is held by another live controller")
        heartbeat = asyncio.create_task(self._heartbeat())
        try:
            return await self._drive()
        except Interrupted:
            await self._record_interruption()
            return None
        except LeaseLost:
            log.warning("lease on %s lost; stopping without writing", self.run_id)
            return None
        finally:
            heartbeat.cancel()
            await self._cancel_all()
            for harness in self._harnesses.values():
                await harness.close()
            if not self._lease_lost.is_set():
                with contextlib.suppress(Exception):
                    self.ledger.release_lease(self.run_id, self.owner)

    # -- the cycle ----------------------------------------------------------------------

    async def _drive(self) -> TerminalResult | None:
        admitted = self.ledger.admitted(self.run_id)
        self._ir = CompiledGraphIr.from_wire(admitted["graph"])
        self._plan = RuntimePlan.from_wire(admitted["runtime"])
        self._input = admitted["initialInput"]
        self._nodes = {
            n.name: n for n in self._ir.nodes() if isinstance(n, StepNode | VerifierNode)
        }
        self._containment = Containment(
            self._plan.sandbox_mode,
            user_root(self.workspace) or self.workspace.resolve(),
            self.ledger.file,
        )
        self._env, missing = _resolve_env(self._plan)
        self._missing_env = missing
        self._logs = _Logs(Redactor(_secret_values(self._plan, self._env)))

        snapshot = self.ledger.snapshot(self.run_id)
        if snapshot.terminal is not None:
            return snapshot.terminal
        try:
            self._append(self._attach_events(snapshot))
        except EventRejected:
            if not self._stop_arrived():
                raise
            # Stopped before it started, so run_started is refused: attach to the stopping
            # run instead; the first cycle closes it.
            self._append(self._attach_events(self.ledger.snapshot(self.run_id)))
        while True:
            self._check_lease()
            if self._interrupt.is_set():
                raise Interrupted(self.run_id)
            snapshot = self._with_pending(self.ledger.snapshot(self.run_id))
            if snapshot.force_stop_requested:
                return await self._close(FailedResult(status="failed", reason="force_stopped"))
            decisions = self._decide(snapshot)
            if decisions.voids:
                await self._void(decisions)
            elif decisions.terminal is not None and not self._running:
                self._append([*self._logs.drain(), Terminal(result=decisions.terminal.result)])
                return decisions.terminal.result
            elif decisions.dispatches:
                if self._dispatch(decisions.dispatches):
                    # Reducing now would only find the executions just started running:
                    # wait for one to settle (or a stop, or the poll's end) first.
                    await self._settle_some()
            elif self._running:
                await self._settle_some()
            else:
                raise RuntimeError(
                    f"run {self.run_id} has nothing to do and no terminal: the reducer "
                    "and the ledger disagree"
                )

    def _decide(self, snapshot: ledger_state.RunSnapshot) -> Decisions:
        """Reduce the run's history. A poll that finds nothing recorded since the last
        reduction (the ledger hands back the very same snapshot) gets the same decisions
        without reducing again: the reducer is a pure function of the history."""
        if self._reduced is None or self._reduced[0] is not snapshot:
            history = self._book.entries(snapshot)
            decisions = reduce(self._ir, self._input, history, run_id=self.run_id)
            self._reduced = (snapshot, decisions)
        return self._reduced[1]

    def _attach_events(self, snapshot: ledger_state.RunSnapshot) -> list[RunEvent]:
        resumed = snapshot.phase != "admitted"
        events: list[RunEvent] = [ControllerAttached(controller=self.owner, resumed=resumed)]
        if not resumed:
            events.append(RunStarted())
        for execution in snapshot.active():
            events.append(
                NodeCompleted(
                    completion=Completion(reference=execution.reference, outcome=error("crash")),
                    detail="runtime_lost: the controller running this execution stopped",
                )
            )
        return events

    def _dispatch(self, dispatches: tuple[Dispatch, ...]) -> bool:
        """Record the dispatches and start them; False when a stop refused them."""
        started: list[RunEvent] = []
        for dispatch in dispatches:
            reference = ExecutionReference(
                run_id=self.run_id,
                node=dispatch.occurrence.node,
                node_instance=dispatch.node_instance,
                execution=dispatch.execution,
            )
            started.append(
                NodeStarted(
                    reference=reference,
                    occurrence=dispatch.occurrence,
                    attempt=dispatch.attempt,
                    input=dispatch.input,
                )
            )
        logs = self._logs.drain()
        try:
            self._append([*logs, *started])
        except EventRejected:
            if not self._stop_arrived():
                raise
            # Stopped since this cycle read the run, so node_started is refused: start
            # nothing; the next cycle closes the run (and records these lines).
            self._logs.pending[:0] = logs
            return False
        for dispatch, event in zip(dispatches, started, strict=True):
            assert isinstance(event, NodeStarted)
            node = self._nodes[dispatch.occurrence.node]
            task = asyncio.create_task(self._execute(event.reference, node, dispatch))
            self._running[dispatch.execution] = _Running(event.reference, node, task)
        return True

    async def _settle_some(self) -> None:
        if self._pending:  # nothing follows them this cycle: record them before waiting
            self._append([])
        tasks: set[asyncio.Future[Any]] = {r.task for r in self._running.values()}
        interrupt = asyncio.ensure_future(self._interrupt.wait())
        try:
            done, _ = await asyncio.wait(
                tasks | {interrupt}, timeout=STOP_POLL_S, return_when="FIRST_COMPLETED"
            )
        finally:
            interrupt.cancel()
        done.discard(interrupt)
        if not done:
            if self._logs.pending:
                self._append(self._logs.drain())
            return
        completed: list[RunEvent] = []
        for execution, running in list(self._running.items()):
            if running.task in done:
                del self._running[execution]
                result = running.task.result()
                completed.append(self._completion(running, result))
        self._pending += [*self._logs.drain(), *completed]

    async def _void(self, decisions: Decisions) -> None:
        events: list[RunEvent] = []
        for void in decisions.voids:
            running = self._running.pop(void.execution, None)
            if running is not None:
                running.task.cancel()
                with contextlib.suppress(BaseException):
                    await running.task
                reference = running.reference
            else:
                reference = self._reference_of(void.execution)
            events.append(ExecutionVoided(reference=reference, reason=void.reason))
        self._append([*self._logs.drain(), *events])

    async def _close(self, result: TerminalResult) -> TerminalResult:
        """Atomic close: refusals for everything active plus the terminal, in one batch."""
        await self._cancel_all()
        snapshot = self._with_pending(self.ledger.snapshot(self.run_id))
        refusals: list[RunEvent] = [
            NodeCompleted(
                completion=Completion(reference=execution.reference, outcome=error("refusal")),
                detail="force stopped",
            )
            for execution in snapshot.active()
        ]
        self._append([*self._logs.drain(), *refusals, Terminal(result=result)])
        return result

    # -- executions ---------------------------------------------------------------------

    async def _execute(
        self, reference: ExecutionReference, node: StepNode | VerifierNode, dispatch: Dispatch
    ) -> HarnessResult:
        binding = self._plan.nodes.get(node.name)
        if binding is None:
            return HarnessResult(error("refusal"), f"node {node.name} has no binding")
        missing = sorted(self._missing_env.get(node.name, ()))
        if missing:
            return HarnessResult(
                error("refusal", "authentication_required"),
                f"environment not set: {', '.join(missing)}",
            )
        request = ExecutionRequest(
            run_id=self.run_id,
            node=node,
            execution=reference.execution,
            node_instance=reference.node_instance,
            attempt=dispatch.attempt,
            input=dispatch.input,
            binding=binding,
            plan=self._plan,
            workspace=self.workspace,
            env=_env_for(binding, self._plan, self._env),
            log=self._logs.sink(reference.execution),
            run_input=self._input,
            events=self._recorded_events,
            containment=self._containment,
        )
        timeout_s = node.timeout_ms / 1000
        try:
            harness = self._harness(request.harness)
            return await asyncio.wait_for(harness.execute(request), timeout_s)
        except HarnessUnavailable as missing:  # refused like any other unmet precondition
            return HarnessResult(error("refusal"), str(missing))
        except TimeoutError:
            return HarnessResult(
                error("timeout"), f"no outcome within {timeout_s:g} s; the worker was stopped"
            )
        except Exception as failure:  # a harness fault is the execution's crash
            return HarnessResult(error("crash"), f"{type(failure).__name__}: {failure}")

    def _completion(self, running: _Running, result: HarnessResult) -> NodeCompleted:
        redacted = _redact_json(result.outcome.to_wire(), self._logs.redactor)
        outcome = check_outcome(running.node, _outcome_from(redacted))
        detail = result.detail
        if (
            outcome is not result.outcome
            and isinstance(outcome, ErrorOutcome)
            and (not isinstance(result.outcome, ErrorOutcome))
        ):
            detail = "the reply does not fit the node's declared output or signals"
        return NodeCompleted(
            completion=Completion(reference=running.reference, outcome=outcome),
            detail=self._logs.redactor.redact(detail) if detail else None,
            usage=result.usage,
        )

    def _recorded_events(self) -> list[RunEvent]:
        """The run's events so far (for harnesses whose agents reason over the run); only
        the events since the last call are read. Harnesses call it from threads too (a
        role preparing a turn off the event loop), hence the lock."""
        with self._events_lock:
            snapshot, tail = self.ledger.snapshot_and_tail(self.run_id, self._events_cursor)
            self._events.extend(event for _, event in tail)
            self._events_cursor = snapshot.cursor
            return list(self._events)

    def _harness(self, name: str) -> Harness:
        if name not in self._harnesses:
            self._harnesses[name] = harness_for(name, in_process=self._in_process)
        return self._harnesses[name]

    def _reference_of(self, execution: str) -> ExecutionReference:
        snapshot = self.ledger.snapshot(self.run_id)
        return snapshot.executions[execution].reference

    async def _cancel_all(self) -> None:
        running, self._running = list(self._running.values()), {}
        for item in running:
            item.task.cancel()
        for item in running:
            with contextlib.suppress(BaseException):
                await item.task

    # -- ledger and lease ---------------------------------------------------------------

    def _append(self, events: Sequence[RunEvent]) -> None:
        """Record the pending completions and ``events`` in one transaction (kept pending
        if the ledger refuses the batch), only while this controller holds the lease."""
        batch = [*self._pending, *events]
        if batch:
            self._check_lease()
            try:
                self.ledger.append(self.run_id, batch, owner=self.owner)
            except LeaseNotHeld:
                self._lease_lost.set()
                raise LeaseLost(self.run_id) from None
        self._pending = []

    async def _record_interruption(self) -> None:
        """Cancel the executions (their workers stop), then record what settled and why the
        controller stopped; the executions still active are crashes for the next
        controller to retry (``runtime_lost``)."""
        await self._cancel_all()
        note = SafeLog(
            stream="system",
            line=(
                f"controller {self.owner} interrupted ({self._interrupted}); the run is "
                f"unfinished: resume it with `zeroshot resume {self.run_id}`"
            ),
        )
        with contextlib.suppress(LeaseLost):
            self._append([*self._logs.drain(), note])

    def _with_pending(self, snapshot: ledger_state.RunSnapshot) -> ledger_state.RunSnapshot:
        """The run as it will be once the pending completions are recorded."""
        return ledger_state.replay(snapshot, self._pending) if self._pending else snapshot

    def _stop_arrived(self) -> bool:
        """Whether a refused batch was refused because a stop was recorded after this cycle
        read the run (``run_started`` and ``node_started`` need a running run)."""
        return self.ledger.snapshot(self.run_id).force_stop_requested

    def _check_lease(self) -> None:
        if self._lease_lost.is_set():
            raise LeaseLost(self.run_id)

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self._heartbeat_s)
            renewed = await asyncio.to_thread(
                self.ledger.renew_lease, self.run_id, self.owner, self._lease_ttl_s
            )
            if not renewed:
                self._lease_lost.set()
                return


def _resolve_env(plan: RuntimePlan) -> tuple[dict[str, str], dict[str, set[str]]]:
    """Values of every declared name present in the environment, and, per node, the
    declared names that are missing (a connection's key is not missing on a harness whose
    keys are optional: see :data:`OPTIONAL_KEY_HARNESSES`)."""
    values: dict[str, str] = {}
    missing: dict[str, set[str]] = {}
    for node, binding in plan.nodes.items():
        required = set(binding.env)
        optional: set[str] = set()
        keys = optional if plan.harness_of(node) in OPTIONAL_KEY_HARNESSES else required
        for connection in binding.connections:
            resolved = plan.connection(connection)
            if resolved is not None:
                keys.add(resolved.env)
        for name in required | optional:
            if name in os.environ:
                values[name] = os.environ[name]
            elif name in required:
                missing.setdefault(node, set()).add(name)
    return values, missing


def _secret_values(plan: RuntimePlan, env: dict[str, str]) -> list[str]:
    """What is redacted: the declared values, the value behind every named connection the
    plan knows (well-known or its own), used by a node or not, and every value of the
    controller's environment that looks like a secret (a worker could reach one another
    way: a file, a child process that inherited it)."""
    names = set(KNOWN_CONNECTIONS.values()) | {c.env for c in plan.connections.values()}
    return [
        *env.values(),
        *(os.environ[name] for name in names if name in os.environ),
        *environment_secrets(os.environ),
    ]


def _env_for(binding: NodeBinding, plan: RuntimePlan, env: dict[str, str]) -> dict[str, str]:
    names = set(binding.env)
    for connection in binding.connections:
        resolved = plan.connection(connection)
        if resolved is not None:
            names.add(resolved.env)
    return {name: env[name] for name in names if name in env}


def _redact_json(value: Any, redactor: Redactor) -> Any:
    if isinstance(value, str):
        return redactor.redact(value)
    if isinstance(value, list):
        return [_redact_json(item, redactor) for item in value]
    if isinstance(value, dict):
        return {key: _redact_json(item, redactor) for key, item in value.items()}
    return value


def _outcome_from(document: dict[str, Any]) -> WorkerOutcome:
    return _OUTCOME.validate_python(document)
