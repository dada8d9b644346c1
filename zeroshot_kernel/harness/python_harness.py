"""The ``python`` harness: workers are importable callables ``package.module:function``.

By default each call runs in a pooled worker process, so a timeout or a stop really
kills the worker (the process is replaced). Runs controlled in-process (notebook-defined
workers, ``__main__:function``) call the function in the controller's own process: async
workers are cancelled, but a sync worker thread cannot be killed, only abandoned.
"""

from __future__ import annotations

import asyncio
import json
import sys
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
from zeroshot_kernel.processes import PIPE, AsyncChild, spawn_async
from zeroshot_kernel.workers import WorkerContext

_STDERR_GRACE_S = 2.0


class WorkerProcess:
    """One warm worker process (its own process group) answering one call at a time."""

    def __init__(self, child: AsyncChild) -> None:
        self.child = child
        self.process = child.process

    @classmethod
    async def start(cls, workspace: str) -> WorkerProcess:
        # Pipe lines may be long: one reply line carries a whole output.
        return cls(
            await spawn_async(
                [sys.executable, "-m", "zeroshot_kernel.harness.python_child"],
                stdin=PIPE,
                cwd=workspace,
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
        self._idle: list[WorkerProcess] = []

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
        )
        return await call_worker(function, request.input, context, verifier=verifier)

    async def _call_pooled(self, request: ExecutionRequest, path: str, verifier: bool) -> Reply:
        worker = (
            self._idle.pop() if self._idle else await WorkerProcess.start(str(request.workspace))
        )
        facts = {
            "run_id": request.run_id,
            "node": request.node.name,
            "execution": request.execution,
            "attempt": request.attempt,
            "workspace": str(request.workspace),
            "env": dict(request.env),
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
            self._idle.append(worker)
        else:
            await worker.kill()
        return reply

    async def close(self) -> None:
        while self._idle:
            await self._idle.pop().kill()


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
