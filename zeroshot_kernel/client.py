"""The Python API: submit graphs, follow runs, stop and resume them.

Example::

    from zeroshot_kernel import Client

    with Client() as client:                # the workspace's ledger, closed on exit
        run = client.submit("graph.json", input={"task": "..."},
                            runtime={"harness": "python",
                                     "nodes": {"work": {"kind": "agent",
                                                        "callable": "workers:work"}}})
        for cursor, event in run.events(follow=True):
            print(cursor, event.kind)
        print(run.result().status, run.phase)

Blocking methods have an ``a``-prefixed coroutine twin: ``events``/``aevents``,
``result``/``aresult``, ``status``/``astatus``.

Every read goes through the ledger, so a ``Run`` object made tomorrow, in another
process or on another machine sharing the ledger, sees exactly the same run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import Field

from zeroshot_kernel.admission.admit import Admission, admit
from zeroshot_kernel.admission.worker_registry import WorkerRegistry
from zeroshot_kernel.contract.graph import GraphSpec
from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.contract.reading import DocumentError, load_document
from zeroshot_kernel.engine.launch import run_workspace, start_detached, start_in_thread
from zeroshot_kernel.engine.liveness import ControllerState, controller_state
from zeroshot_kernel.engine.owner import owner_gone
from zeroshot_kernel.engine.stop import StopResult, stop_run
from zeroshot_kernel.exceptions import InvalidInput, Refused
from zeroshot_kernel.features import submit_guards
from zeroshot_kernel.harness.boxing import require_box
from zeroshot_kernel.harness.plan import AgentBinding, RuntimePlan
from zeroshot_kernel.ledger import Ledger, RunSnapshot, RunSummary
from zeroshot_kernel.ledger.events import RunEvent, SafeLog, TerminalResult
from zeroshot_kernel.profiles import Profile, ProfileStore, TemplateSource
from zeroshot_kernel.sandbox import DEFAULT_MODE, SandboxMode
from zeroshot_kernel.targets import resolve_ledger
from zeroshot_kernel.workspace import display_url, find_workspace

POLL_S = 0.2


class AdmissionRejected(InvalidInput):
    """The submission failed admission; ``diagnostics`` say what to change."""

    def __init__(self, admission: Admission) -> None:
        self.diagnostics = admission.diagnostics
        lines = [f"{d.code} at {d.readable_path()}: {d.message}" for d in self.diagnostics]
        super().__init__("submission rejected:\n  " + "\n  ".join(lines))


class RunHeld(Refused):
    """A live controller holds the run; resuming would race it."""

    def __init__(self, run_id: str, owner: str, until: str) -> None:
        super().__init__(
            f"run {run_id} is held by controller {owner} until {until}; resume it after "
            "the lease expires (if that controller is dead)"
        )


class ActiveExecution(ContractModel):
    execution: str
    node: str


class Status(ContractModel):
    phase: Literal["admitted", "running", "stopping", "finished"]
    active_executions: list[ActiveExecution] | None = Field(
        default=None, exclude_if=lambda v: v is None
    )
    terminal_result: TerminalResult | None = Field(default=None, exclude_if=lambda v: v is None)


class RunStatus(ContractModel):
    """``zeroshot status --json``: the run, the cursor it was read at, and its status.

    ``phase``, ``active_executions`` and ``terminal`` read the nested ``status`` directly
    (``run.status().phase``); the wire form keeps the nesting.
    """

    run_id: str
    title: str
    at_cursor: str
    status: Status

    @property
    def phase(self) -> Literal["admitted", "running", "stopping", "finished"]:
        return self.status.phase

    @property
    def active_executions(self) -> list[ActiveExecution]:
        """What runs now (empty unless running or stopping)."""
        return list(self.status.active_executions or [])

    @property
    def terminal(self) -> TerminalResult | None:
        """How the run ended, or None while it has not."""
        return self.status.terminal_result


class Run:
    """A handle on one run in a ledger; cheap to make, safe to share.

    Example::

        run = client.run("run-w7fepoimlxaa")
        print(run.phase)                    # admitted, running, stopping or finished
        result = run.result(timeout=60)     # or, in a coroutine: await run.aresult()
        if isinstance(result, SucceededResult):
            print(result.output)
    """

    def __init__(self, client: Client, run_id: str) -> None:
        self.client = client
        self.id = run_id
        self._thread: threading.Thread | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        return f"Run({self.id!r})"

    @property
    def phase(self) -> Literal["admitted", "running", "stopping", "finished"]:
        """The run's phase, read now."""
        return self.client.ledger.snapshot(self.id).phase

    @property
    def terminal(self) -> TerminalResult | None:
        """How the run ended (``SucceededResult`` or ``FailedResult``), or None while it
        runs; read now, without waiting."""
        return self.client.ledger.snapshot(self.id).terminal

    def admitted(self) -> dict[str, Any]:
        """The admitted submission, exactly as recorded (``graph``, ``runtime``,
        ``initialInput``, ...)."""
        return self.client.ledger.admitted(self.id)

    def graph(self) -> dict[str, Any]:
        """The run's admitted graph document."""
        graph: dict[str, Any] = self.admitted()["graph"]
        return graph

    @property
    def sandbox(self) -> SandboxMode:
        """How the run contains model-written code: ``bwrap`` (boxed) or ``none``
        (UNCONTAINED, the user's choice)."""
        runtime = self.admitted().get("runtime") or {}
        return "none" if runtime.get("sandbox") == "none" else DEFAULT_MODE

    def status(self) -> RunStatus:
        """The run, the cursor it was read at, its phase, active executions and result
        (``zeroshot status --json`` is its ``to_wire()``)."""
        snapshot = self.client.ledger.snapshot(self.id)
        active = None
        if snapshot.phase in ("running", "stopping"):
            active = [
                ActiveExecution(execution=e.reference.execution, node=e.reference.node)
                for e in snapshot.active()
            ]
        return RunStatus(
            run_id=self.id,
            title=snapshot.title,
            at_cursor=snapshot.cursor,
            status=Status(
                phase=snapshot.phase,
                active_executions=active,
                terminal_result=snapshot.terminal,
            ),
        )

    async def astatus(self) -> RunStatus:
        """Async form of :meth:`status`."""
        return await asyncio.to_thread(self.status)

    def events(
        self,
        after: str | None = None,
        *,
        follow: bool = False,
        kinds: set[str] | None = None,
        poll_s: float = POLL_S,
    ) -> Iterator[tuple[str, RunEvent]]:
        """Events after cursor ``after`` (exclusive), with their cursors. With ``follow``
        keep polling until the terminal event has been yielded."""
        cursor = after
        while True:
            snapshot, tail = self.client.ledger.snapshot_and_tail(self.id, cursor, kinds=kinds)
            for cursor, event in tail:
                yield cursor, event
            cursor = snapshot.cursor
            if not follow or snapshot.terminal is not None:
                return
            time.sleep(poll_s)

    async def aevents(
        self, after: str | None = None, *, kinds: set[str] | None = None, poll_s: float = POLL_S
    ) -> AsyncIterator[tuple[str, RunEvent]]:
        """Async form of ``events(follow=True)``; cancelling it never stops the run."""
        cursor = after
        while True:
            snapshot, tail = await asyncio.to_thread(
                self.client.ledger.snapshot_and_tail, self.id, cursor, kinds=kinds
            )
            for cursor, event in tail:
                yield cursor, event
            cursor = snapshot.cursor
            if snapshot.terminal is not None:
                return
            await asyncio.sleep(poll_s)

    def logs(
        self, after: str | None = None, *, follow: bool = False, execution: str | None = None
    ) -> Iterator[tuple[str, SafeLog]]:
        """Worker log lines (already redacted), optionally for one execution."""
        for cursor, event in self.events(after, follow=follow, kinds={"safe_log"}):
            if isinstance(event, SafeLog) and execution in (None, event.execution):
                yield cursor, event

    def result(self, timeout: float | None = None, *, poll_s: float = POLL_S) -> TerminalResult:
        """Block until the run ends and return how (``SucceededResult`` or
        ``FailedResult``); ``TimeoutError`` after ``timeout`` seconds leaves it running."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            terminal = self.client.ledger.snapshot(self.id).terminal
            if terminal is not None:
                return terminal
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"run {self.id} still running after {timeout} s")
            time.sleep(poll_s)

    # The name notebooks and scripts used before ``result``; the same method.
    wait = result

    async def aresult(
        self, timeout: float | None = None, *, poll_s: float = POLL_S
    ) -> TerminalResult:
        """Async form of :meth:`result`; cancelling this await never stops the run."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            snapshot = await asyncio.to_thread(self.client.ledger.snapshot, self.id)
            if snapshot.terminal is not None:
                return snapshot.terminal
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"run {self.id} still running after {timeout} s")
            await asyncio.sleep(poll_s)

    def controller(self) -> ControllerState:
        """Who drives the run: ``live``, ``starting``, ``gone`` (with why) or
        ``finished``. A controller this handle started and that already exited is gone."""
        state = controller_state(self.client.ledger, self.id)
        if state.phase in ("starting", "gone") and self._process is not None:
            if self._process.poll() is None:
                return ControllerState("starting", state.owner)
            if state.phase == "starting":
                return ControllerState(
                    "gone", why=f"its controller exited with status {self._process.returncode}"
                )
        return state

    def stop(self) -> StopResult:
        """Stop the run: its live controller closes it atomically as ``force_stopped``;
        with no live controller the run is closed here (``runtime_lost``)."""
        return stop_run(self.client.ledger, self.id)


class Client:
    """Entry point to one ledger: ``ledger`` (a URL or SQLite path) or the named
    ``target``, else ``ZEROSHOT_LEDGER`` or ``ZEROSHOT_TARGET``, else the workspace's.

    Making a client creates nothing: the ledger's tables are created by the first write
    (``submit``, ``save_profile``), and reading a ledger that does not exist yet finds no
    runs. Use it as a context manager (``with`` or ``async with``) to close its database
    connections on exit, or call :meth:`close`.

    Example::

        from zeroshot_kernel import Client, LedgerError

        try:
            with Client() as client:
                for summary in client.runs():
                    print(summary.run_id, summary.phase)
        except LedgerError as problem:      # damaged, locked, unreachable: one line
            print(problem)
    """

    def __init__(
        self,
        ledger: str | os.PathLike[str] | None = None,
        *,
        target: str | None = None,
        workspace: str | None = None,
    ) -> None:
        self.workspace = find_workspace(workspace)
        self.url = resolve_ledger(ledger, target, self.workspace)
        self.ledger = Ledger(self.url)
        self._profiles: ProfileStore | None = None

    @property
    def display_url(self) -> str:
        """The ledger URL with any password hidden."""
        return display_url(self.url)

    def close(self) -> None:
        """Release the database connections; the client must not be used afterwards."""
        if self._profiles is not None:
            self._profiles.close()
            self._profiles = None
        self.ledger.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_: object) -> None:
        await asyncio.to_thread(self.close)

    @property
    def profiles(self) -> ProfileStore:
        """The profiles saved in this ledger's database."""
        if self._profiles is None:
            self._profiles = ProfileStore(self.url)
        return self._profiles

    def save_profile(
        self,
        name: str,
        graph: GraphSpec | Mapping[str, Any] | str | os.PathLike[str],
        *,
        runtime: RuntimePlan | Mapping[str, Any] | None = None,
        input: Any = None,
        title: str | None = None,
        template: TemplateSource | None = None,
        replace: bool = False,
        registry: WorkerRegistry | None = None,
    ) -> Profile:
        """Admit the submission (nothing runs) and store it as profile ``name``; without
        a default ``input`` each run must give one.

        Raises :class:`AdmissionRejected` when it would not be admitted, and
        ``ProfileExists`` when the name is taken unless ``replace``. Later runs of the
        profile use exactly what is stored, whatever happens to a template meanwhile.
        """
        admission = admit(
            _graph(graph),
            initial_input=input,
            runtime=runtime,
            registry=registry,
            require_input=False,
            workspace=self.workspace,
        )
        if admission.admitted is None:
            raise AdmissionRejected(admission)
        profile = Profile(
            name=name,
            title=title or name,
            graph=_graph_document(graph),
            runtime=admission.admitted.runtime.to_wire(),
            input=input,
            identity=admission.admitted.identity,
            template=template,
        )
        return self.profiles.save(profile, replace=replace)

    def validate_profile(
        self, name: str, *, input: Any = None, registry: WorkerRegistry | None = None
    ) -> Admission:
        """Every admission check of a saved profile, as for the same inline graph;
        ``input`` replaces the profile's default input."""
        profile = self.profiles.get(name)
        return self.validate(
            profile.graph,
            input=profile.chosen_input(input),
            runtime=profile.runtime,
            registry=registry,
        )

    def submit_profile(
        self,
        name: str,
        *,
        input: Any = None,
        title: str | None = None,
        in_process: bool | None = None,
        registry: WorkerRegistry | None = None,
        sandbox: SandboxMode | None = None,
    ) -> Run:
        """Fetch a saved profile and submit its stored graph and runtime (``input``
        replaces the profile's default input, ``sandbox`` its runtime's sandbox mode).
        Raises :class:`AdmissionRejected`."""
        profile = self.profiles.get(name)
        runtime = profile.runtime if sandbox is None else {**profile.runtime, "sandbox": sandbox}
        return self.submit(
            profile.graph,
            input=profile.chosen_input(input),
            runtime=runtime,
            title=title or profile.title,
            in_process=in_process,
            registry=registry,
        )

    def validate(
        self,
        graph: GraphSpec | Mapping[str, Any] | str | os.PathLike[str],
        *,
        input: Any = None,
        runtime: RuntimePlan | Mapping[str, Any] | None = None,
        registry: WorkerRegistry | None = None,
    ) -> Admission:
        """Every admission check; creates nothing (``zeroshot validate``)."""
        return admit(
            _graph(graph),
            initial_input=input,
            runtime=runtime,
            registry=registry,
            workspace=self.workspace,
        )

    def submit(
        self,
        graph: GraphSpec | Mapping[str, Any] | str | os.PathLike[str],
        *,
        input: Any = None,
        runtime: RuntimePlan | Mapping[str, Any] | None = None,
        title: str | None = None,
        submission_key: str | None = None,
        in_process: bool | None = None,
        registry: WorkerRegistry | None = None,
    ) -> Run:
        """Admit, record and start a run. Raises :class:`AdmissionRejected`, or
        ``StudyError`` for an auto-research run whose study already has an unfinished run
        (nothing is created then).

        The controller is a detached process unless ``in_process`` (automatic when a
        python worker lives in ``__main__``, as notebook-defined functions do).
        """
        source = _graph(graph)
        admission = admit(
            source,
            initial_input=input,
            runtime=runtime,
            title=title or _title(graph),
            registry=registry,
            workspace=self.workspace,
        )
        if admission.admitted is None:
            raise AdmissionRejected(admission)
        admitted = admission.admitted
        require_box(admitted.runtime)
        # Features guard every way of submitting (CLI, magics, widgets, profiles, notebooks,
        # this API): auto-research refuses a second unfinished run of one study.
        with contextlib.ExitStack() as guards:
            for guard in submit_guards():
                guards.enter_context(guard(self, input))
            run_id = self.ledger.create_run(
                admitted.to_wire(), title=admitted.title, submission_key=submission_key
            )
        if in_process is None:
            in_process = _needs_this_process(admitted.runtime)
        return self._start(run_id, in_process=in_process)

    def resume(self, run_id: str, *, in_process: bool = False) -> Run:
        """Start a controller for a run whose controller died or whose lease expired: at
        once when the lease holder's process is provably gone on this host.

        Raises :class:`RunHeld` while another controller's lease is live."""
        self.ledger.snapshot(run_id)  # RunNotFound early
        lease = self.ledger.lease(run_id)
        replacing = None
        if lease is not None and lease.expires_at.timestamp() > time.time():
            if not owner_gone(lease.owner):
                raise RunHeld(run_id, lease.owner, lease.expires_at.isoformat())
            replacing = lease.owner
        return self._start(run_id, in_process=in_process, replacing=replacing)

    def record(self, admission: Admission) -> Run:
        """Record an admitted submission as a new run without starting a controller (a
        feature that starts it its own way). Raises :class:`AdmissionRejected`."""
        if admission.admitted is None:
            raise AdmissionRejected(admission)
        admitted = admission.admitted
        require_box(admitted.runtime)
        return Run(self, self.ledger.create_run(admitted.to_wire(), title=admitted.title))

    def run(self, run_id: str) -> Run:
        """A handle on an existing run; ``RunNotFound`` if the ledger has no such run."""
        self.ledger.snapshot(run_id)
        return Run(self, run_id)

    def runs(self) -> list[RunSummary]:
        """Every run, oldest first (none when the ledger does not exist yet)."""
        return self.ledger.runs()

    async def aruns(self) -> list[RunSummary]:
        """Async form of :meth:`runs`."""
        return await asyncio.to_thread(self.runs)

    # Reading runs by id, as views, widgets and reports do (see ``ledger.reader``).

    def snapshot(self, run_id: str) -> RunSnapshot:
        """The run's current projection: phase, executions, result, cursor."""
        return self.ledger.snapshot(run_id)

    def snapshot_and_tail(
        self,
        run_id: str,
        after: str | None = None,
        *,
        limit: int | None = None,
        kinds: set[str] | None = None,
    ) -> tuple[RunSnapshot, list[tuple[str, RunEvent]]]:
        """The run's snapshot and its events after cursor ``after``, read together."""
        return self.ledger.snapshot_and_tail(run_id, after, limit=limit, kinds=kinds)

    def admitted(self, run_id: str) -> dict[str, Any]:
        """The run's admitted submission, exactly as recorded."""
        return self.ledger.admitted(run_id)

    def _start(self, run_id: str, *, in_process: bool, replacing: str | None = None) -> Run:
        run = Run(self, run_id)
        workspace = run_workspace(self.workspace, run_id)
        if in_process:
            run._thread = start_in_thread(self.ledger, run_id, workspace, replacing=replacing)
        else:
            run._process = start_detached(self.url, run_id, workspace, replacing=replacing)
        return run


def _graph(graph: GraphSpec | Mapping[str, Any] | str | os.PathLike[str]) -> Any:
    if isinstance(graph, GraphSpec | Mapping):
        return graph
    try:
        return load_document(Path(graph))
    except DocumentError as error:
        raise ValueError(str(error)) from error


def _graph_document(
    graph: GraphSpec | Mapping[str, Any] | str | os.PathLike[str],
) -> dict[str, Any]:
    source = _graph(graph)
    if isinstance(source, GraphSpec):
        return source.to_wire()
    return dict(source)


def _title(graph: object) -> str:
    if isinstance(graph, str | os.PathLike):
        return Path(graph).stem
    return "untitled run"


def _needs_this_process(plan: RuntimePlan) -> bool:
    return any(
        isinstance(binding, AgentBinding)
        and binding.callable is not None
        and binding.callable.startswith("__main__:")
        for binding in plan.nodes.values()
    )
