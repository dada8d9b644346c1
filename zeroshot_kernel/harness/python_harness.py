"""The ``python`` harness: workers are importable callables ``package.module:function``.

By default each call runs in a pooled worker process, so a timeout or a stop really
kills the worker (the process is replaced). Runs controlled in-process (notebook-defined
workers, ``__main__:function``) call the function in the controller's own process: async
workers are cancelled, but a sync worker thread cannot be killed, only abandoned.

A worker process gets an allow-list of the controller's environment (no credential it did
not declare: the values of the names a node declares are set for that call only) and
never imports from a folder a box can write: the interpreter starts with ``-P`` (its
working directory is not on ``sys.path``) and its ``PYTHONPATH`` holds no run worktree. The
engine's own code (``zeroshot_kernel.*``: trusted nodes, embedded agents) runs in workers
of its own whose path holds nothing of the workspace and whose working directory is never a
run's worktree; only the user's workers find the
user's workspace on theirs, as the user's code expects.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from zeroshot_kernel.contract.graph import VerifierNode
from zeroshot_kernel.contract.outcome import (
    VerifiedOutcome,
    VerifierOutcome,
    WorkerOutcome,
    error,
)
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult
from zeroshot_kernel.harness.plan import AgentBinding
from zeroshot_kernel.harness.python_call import Reply, call_worker, resolve
from zeroshot_kernel.harness.python_child import END_OF_CALL
from zeroshot_kernel.processes import PIPE, AsyncChild, allowed_env, spawn_async
from zeroshot_kernel.sandbox import user_root
from zeroshot_kernel.workers import WorkerContext

_STDERR_GRACE_S = 2.0
ENGINE_PACKAGE = "zeroshot_kernel."
WORKER_ENV_NAMES = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TERM",
    "TMPDIR",
    "VIRTUAL_ENV",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
)
"""Variables of the controller's environment every worker process gets (none a secret)."""
ENGINE_ENV_PREFIX = "ZEROSHOT_"
"""The engine's own settings (the ledger's URL among them) reach its own workers only."""


def worker_env(workspace: Path, *, engine: bool) -> dict[str, str]:
    """A worker process's environment: the allow-list, a ``PYTHONPATH`` without anything
    below the workspace (plus the workspace itself for the user's workers, unless it is a
    run's worktree), and, for the engine's own workers, the engine's settings."""
    env = allowed_env(WORKER_ENV_NAMES)
    real = Path(os.path.realpath(workspace))
    untrusted = user_root(real) is not None
    entries = [
        entry
        for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if entry and not _below(Path(os.path.realpath(entry)), real)
    ]
    if not engine and not untrusted:
        entries.insert(0, str(real))
    if entries:
        env["PYTHONPATH"] = os.pathsep.join(entries)
    if engine:
        env.update({k: v for k, v in os.environ.items() if k.startswith(ENGINE_ENV_PREFIX)})
    return env


def _below(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def is_engine_code(path: str) -> bool:
    """Whether ``module:function`` is the engine's own code (never a workspace's)."""
    return path.startswith(ENGINE_PACKAGE)


class WorkerProcess:
    """One warm worker process (its own process group) answering one call at a time."""

    def __init__(self, child: AsyncChild) -> None:
        self.child = child
        self.process = child.process

    @classmethod
    async def start(cls, workspace: Path, *, engine: bool) -> WorkerProcess:
        # Pipe lines may be long: one reply line carries a whole output.
        return cls(
            await spawn_async(
                [sys.executable, "-P", "-m", "zeroshot_kernel.harness.python_child"],
                stdin=PIPE,
                cwd=(user_root(workspace) or workspace) if engine else workspace,
                env=worker_env(workspace, engine=engine),
            )
        )

    async def call(self, message: dict[str, Any], request: ExecutionRequest) -> Reply:
        assert self.process.stdin and self.process.stdout and self.process.stderr
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        await self.process.stdin.drain()
        errors = asyncio.create_task(self._forward_errors(request))
        try:
            while line := await self.process.stdout.readline():
                reply = json.loads(line)
                if "log" in reply:
                    request.log("output", reply["log"])
                else:
                    status, payload, detail = reply["result"]
                    # The child marked the end of this call's stderr before replying: record
                    # all of it here, not lose it (or log it under the next call). The grace
                    # only matters if a worker took the mark's way out (closed its stderr).
                    await asyncio.wait({errors}, timeout=_STDERR_GRACE_S)
                    return (status, payload, detail)
            code = await self.child.exited()
            return ("crash", None, f"worker process died (exit code {code})")
        finally:
            errors.cancel()

    async def _forward_errors(self, request: ExecutionRequest) -> None:
        """Forward stderr lines until the child's end-of-call mark (or end of file)."""
        assert self.process.stderr
        while line := await self.process.stderr.readline():
            text, end, _ = line.decode(errors="replace").rstrip("\n").partition(END_OF_CALL)
            if text:
                request.log("error", text)
            if end:
                return

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def kill(self) -> None:
        """Kill the whole process group (timeouts and stops) and reap the worker."""
        await self.child.terminate()


class PythonHarness:
    """Runs python-harness executions, pooled in processes or in-process."""

    def __init__(self, *, in_process: bool = False) -> None:
        self._in_process = in_process
        self._idle: dict[bool, list[WorkerProcess]] = {True: [], False: []}
        """Idle workers of the engine's own code (``True``) and of the user's."""

    async def execute(self, request: ExecutionRequest) -> HarnessResult:
        if not isinstance(request.binding, AgentBinding) or request.binding.callable is None:
            return HarnessResult(error("refusal"), "no callable is bound to this node")
        verifier = isinstance(request.node, VerifierNode)
        if self._in_process:
            reply = await self._call_here(request, request.binding.callable, verifier)
        else:
            reply = await self._call_pooled(request, request.binding.callable, verifier)
        return _result(reply)

    async def _call_here(self, request: ExecutionRequest, path: str, verifier: bool) -> Reply:
        try:
            function = resolve(path)
        except Exception as failure:
            return ("crash", None, f"cannot load {path}: {type(failure).__name__}: {failure}")
        context = WorkerContext(
            run_id=request.run_id,
            node=request.node.name,
            execution=request.execution,
            attempt=request.attempt,
            workspace=request.workspace,
            env=dict(request.env),
            log=lambda line: request.log("output", str(line)),
            containment=request.containment,
        )
        return await call_worker(function, request.input, context, verifier=verifier)

    async def _call_pooled(self, request: ExecutionRequest, path: str, verifier: bool) -> Reply:
        engine = is_engine_code(path)
        idle = self._idle[engine]
        worker = idle.pop() if idle else await WorkerProcess.start(request.workspace, engine=engine)
        facts = {
            "run_id": request.run_id,
            "node": request.node.name,
            "execution": request.execution,
            "attempt": request.attempt,
            "workspace": str(request.workspace),
            "env": dict(request.env),
            "containment": request.containment.to_wire(),
        }
        try:
            reply = await worker.call(
                {"path": path, "input": request.input, "facts": facts, "verifier": verifier},
                request,
            )
        except BaseException:
            # Cancelled (timeout or stop): the worker must not live on. Shielded so the
            # kill completes even though this task is being cancelled.
            await asyncio.shield(worker.kill())
            raise
        if worker.alive and reply[0] != "crash":
            idle.append(worker)
        else:
            await worker.kill()
        return reply

    async def close(self) -> None:
        for idle in self._idle.values():
            while idle:
                await idle.pop().kill()


def _result(reply: Reply) -> HarnessResult:
    status, payload, detail = reply
    outcome: WorkerOutcome
    if status == "verified":
        outcome = VerifiedOutcome(status="verified", output=payload)
    elif status == "verifier":
        try:
            outcome = VerifierOutcome(status="verifier", **payload)
        except ValidationError as invalid:
            return HarnessResult(error("malformed", "malformed_result"), _first(invalid))
    elif status == "refusal":
        outcome = error("refusal", payload)
    elif status == "malformed":
        outcome = error("malformed", "malformed_result")
    else:
        outcome = error("crash")
    return HarnessResult(outcome, detail)


def _first(invalid: ValidationError) -> str:
    problem = invalid.errors(include_url=False)[0]
    where = ".".join(str(part) for part in problem["loc"])
    return f"verifier reply is malformed at {where}: {problem['msg']}"
