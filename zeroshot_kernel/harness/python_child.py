"""The loop a Python worker process runs: read a call, run it, write the reply.

Started as ``python -m zeroshot_kernel.harness.python_child``. The protocol is JSON lines
on a private copy of stdout; what the worker prints (``print`` and anything written to
file descriptor 1 or 2) reaches the parent as log lines, never as protocol. The process
(with its whole group) ends when its controller dies, however it died.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from zeroshot_kernel.harness.python_call import Reply, call_worker_here, resolve
from zeroshot_kernel.processes import die_with_parent
from zeroshot_kernel.sandbox import Containment
from zeroshot_kernel.workers import WorkerContext

END_OF_CALL = "\x00zeroshot:end-of-call"
"""Written to stderr after each call, before its reply, so the parent knows it has read
all of that call's stderr (the two pipes are read independently)."""


class _Protocol:
    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def send(self, message: dict[str, Any]) -> None:
        self._stream.write(json.dumps(message) + "\n")
        self._stream.flush()


class _LogLines(io.TextIOBase):
    """``sys.stdout`` replacement: each complete line becomes a log message."""

    def __init__(self, protocol: _Protocol) -> None:
        self._protocol = protocol
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self._protocol.send({"log": line})
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._protocol.send({"log": self._pending})
            self._pending = ""


def main() -> None:
    # A controller killed with SIGKILL cannot kill its workers, and a resumed run retries
    # their executions: an orphan must not keep working on the workspace beside the retry.
    die_with_parent()
    protocol = _Protocol(os.fdopen(os.dup(1), "w", encoding="utf-8"))
    os.dup2(2, 1)  # native writes to stdout land on stderr, which the parent logs
    stdout = _LogLines(protocol)
    sys.stdout = stdout
    for line in sys.stdin:
        call = json.loads(line)
        reply = _answer(call, protocol)
        stdout.flush()
        sys.stderr.flush()
        with contextlib.suppress(OSError):  # a worker may have closed its stderr
            os.write(2, f"{END_OF_CALL}\n".encode())
        try:
            protocol.send({"result": list(reply)})
        except (TypeError, ValueError) as error:
            detail = f"the worker returned non-JSON data: {error}"
            protocol.send({"result": ["malformed", None, detail]})


def _answer(call: dict[str, Any], protocol: _Protocol) -> Reply:
    path = call["path"]
    try:
        function = resolve(path)
    except Exception as error:
        return ("crash", None, f"cannot load {path}: {type(error).__name__}: {error}")
    facts = call["facts"]
    context = WorkerContext(
        run_id=facts["run_id"],
        node=facts["node"],
        execution=facts["execution"],
        attempt=facts["attempt"],
        workspace=Path(facts["workspace"]),
        env=facts["env"],
        log=lambda line: protocol.send({"log": str(line)}),
        containment=Containment.from_wire(facts.get("containment")),
    )
    with _declared(facts["env"]):
        return call_worker_here(function, call["input"], context, verifier=call["verifier"])


@contextlib.contextmanager
def _declared(values: dict[str, str]) -> Iterator[None]:
    """The values of the names the node declares, in the environment for this call only
    (the pooled process serves other nodes, which declared other names, next)."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


if __name__ == "__main__":
    main()
