"""Python workers for the engine end-to-end tests (copied into each test workspace).

Every worker first records its pid in ``pids/<execution>`` (written whole through a
temporary dot-file, so a reader never sees it half-written) and, when it returns, appends
one line ``{execution, node, attempt}`` to ``effects.jsonl``: the side-effect counter the
resume tests read. ``behaviour.json`` in the workspace scripts per node what a worker does
before its work: ``sleep`` seconds (or ``sleep_by_value`` keyed by the input's value or
item n); ``wait_for_workers`` / ``wait_for_effects`` / ``wait_for_completions``: wait until
that many workers (of any node) have started / returned / had their completion recorded in the
run's ledger (a number, or a mapping keyed like ``sleep_by_value``);
``crash_until``/``exit_until``/``hang_until``: misbehave on attempts below that number;
``wait_for_file``: wait until that file exists in the workspace (a gate the test opens).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zeroshot_kernel.exceptions import OperationFailed
from zeroshot_kernel.workers import Refusal, Verdict, WorkerContext


def _behaviour(context: WorkerContext) -> dict[str, Any]:
    path = context.workspace / "behaviour.json"
    if not path.exists():
        return {}
    scripted: dict[str, Any] = json.loads(path.read_text()).get(context.node, {})
    return scripted


def _start(value: Any, context: WorkerContext) -> None:
    pids = context.workspace / "pids"
    pids.mkdir(exist_ok=True)
    temporary = pids / f".{context.execution}.{os.getpid()}.tmp"
    temporary.write_text(str(os.getpid()))
    os.replace(temporary, pids / context.execution)
    behaviour = _behaviour(context)
    if context.attempt < behaviour.get("exit_until", 0):
        os._exit(3)
    if context.attempt < behaviour.get("crash_until", 0):
        raise RuntimeError(f"scripted crash on attempt {context.attempt}")
    if context.attempt < behaviour.get("hang_until", 0):
        time.sleep(120)
    key = str(value.get("value", value.get("n"))) if isinstance(value, dict) else ""
    time.sleep(behaviour.get("sleep_by_value", {}).get(key, behaviour.get("sleep", 0)))
    if behaviour.get("wait_for_file"):
        gate = context.workspace / behaviour["wait_for_file"]
        _wait_for(behaviour, "wait_for_file", key, lambda: int(gate.exists()), wanted=1)
    effects = context.workspace / "effects.jsonl"
    _wait_for(
        behaviour,
        "wait_for_workers",
        key,
        lambda: sum(not path.name.startswith(".") for path in pids.iterdir()),
    )
    _wait_for(
        behaviour,
        "wait_for_effects",
        key,
        lambda: len(effects.read_text().splitlines()) if effects.exists() else 0,
    )
    if behaviour.get("wait_for_completions"):
        # imported here: the ledger's imports would slow every worker's start
        from zeroshot_kernel.client import Client
        from zeroshot_kernel.ledger.events import NodeCompleted

        run = Client(context.workspace / ".zeroshot" / "ledger.db").run(context.run_id)
        _wait_for(
            behaviour,
            "wait_for_completions",
            key,
            lambda: sum(isinstance(event, NodeCompleted) for _, event in run.events()),
        )


def _wait_for(
    behaviour: dict[str, Any],
    name: str,
    key: str,
    count: Callable[[], int],
    wanted: int | None = None,
) -> None:
    """Wait until ``count()`` reaches ``wanted``, by default the number scripted under
    ``name`` (or under ``key``)."""
    if wanted is None:
        wanted = behaviour.get(name, 0)
        wanted = wanted.get(key, 0) if isinstance(wanted, dict) else wanted
    deadline = time.monotonic() + 30
    while count() < wanted:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name}: never reached {wanted}")
        time.sleep(0.01)


def _done(context: WorkerContext) -> None:
    line = json.dumps(
        {"execution": context.execution, "node": context.node, "attempt": context.attempt}
    )
    with Path(context.workspace / "effects.jsonl").open("a") as effects:
        effects.write(line + "\n")


def inc(value: dict[str, int], context: WorkerContext) -> dict[str, int]:
    """Prints a line, and writes another to stderr just before returning."""
    _start(value, context)
    print(f"inc {value['value']}")
    _done(context)
    os.write(2, f"inc {value['value']} done\n".encode())
    return {"value": value["value"] + 1}


def double(value: dict[str, int], context: WorkerContext) -> dict[str, int]:
    _start(value, context)
    print(f"double {value['value']}")
    _done(context)
    return {"value": value["value"] * 2}


def noop(value: None, context: WorkerContext) -> None:
    _start(value, context)
    _done(context)


def tag(value: dict[str, int], context: WorkerContext) -> dict[str, str]:
    _start(value, context)
    _done(context)
    return {"tag": context.node}


def judge(value: dict[str, int], context: WorkerContext) -> Verdict:
    _start(value, context)
    _done(context)
    even = value["value"] % 2 == 0
    return Verdict(
        signals={
            "verdict": "accepted" if even else "rejected",
            "size": "big" if value["value"] >= 10 else "small",
        }
    )


def judge_tag(value: dict[str, int], context: WorkerContext) -> Verdict:
    """A racer: accepts unless the behaviour says ``reject``."""
    _start(value, context)
    _done(context)
    rejected = _behaviour(context).get("reject", False)
    return Verdict(
        signals={"verdict": "rejected" if rejected else "accepted"}, output={"tag": context.node}
    )


def at_least_three(value: dict[str, int], context: WorkerContext) -> Verdict:
    _start(value, context)
    _done(context)
    return Verdict(signals={"verdict": "accepted" if value["value"] >= 3 else "rejected"})


def square(value: dict[str, int], context: WorkerContext) -> dict[str, int]:
    _start(value, context)
    if value["n"] < 0:
        raise ValueError(f"cannot square negative item {value['n']}")
    _done(context)
    return {"sq": value["n"] ** 2}


def sign(value: dict[str, int], context: WorkerContext) -> Verdict:
    _start(value, context)
    _done(context)
    return Verdict(signals={"sign": "neg" if value["n"] < 0 else "pos"})


def settle(value: dict[str, int], context: WorkerContext) -> None:
    _start(value, context)
    _done(context)


def review(value: dict[str, int], context: WorkerContext) -> Verdict:
    _start(value, context)
    _done(context)
    good = value["value"] > 0
    return Verdict(
        signals={"verdict": "accepted" if good else "rejected"},
        output={"value": value["value"] * 10},
        diagnostic={"note": "fine" if good else "too small", "score": value["value"]},
    )


def wrong_type(value: dict[str, int], context: WorkerContext) -> dict[str, str]:
    _start(value, context)
    _done(context)
    return {"value": "not an integer"}


def crash(value: dict[str, int], context: WorkerContext) -> dict[str, int]:
    _start(value, context)
    raise RuntimeError("this worker always crashes")


def fail_plainly(value: dict[str, int], context: WorkerContext) -> dict[str, int]:
    """Fails with one of the project's own errors, whose message is written to be read."""
    _start(value, context)
    raise OperationFailed("the value cannot be used here")


def die(value: dict[str, int], context: WorkerContext) -> dict[str, int]:
    _start(value, context)
    os._exit(7)


def refuse(value: dict[str, int], context: WorkerContext) -> dict[str, int]:
    _start(value, context)
    raise Refusal("not allowed to touch this", reason="policy_denied")


def hang(value: dict[str, int], context: WorkerContext) -> dict[str, int]:
    _start(value, context)
    time.sleep(120)
    return value


def leak(value: dict[str, int], context: WorkerContext) -> dict[str, Any]:
    """Prints its secret (to stdout and stderr) and returns it inside its output."""
    _start(value, context)
    secret = context.env["ZS_TEST_SECRET"]
    print(f"the secret is {secret}")
    os.write(2, f"stderr also has {secret}\n".encode())
    _done(context)
    return {"value": value["value"], "echo": f"secret={secret}"}


def upper(value: dict[str, str], context: WorkerContext) -> dict[str, str]:
    _start(value, context)
    _done(context)
    return {"text": value["text"].upper()}


def is_upper(value: dict[str, str], context: WorkerContext) -> Verdict:
    _start(value, context)
    _done(context)
    ok = value["text"].isupper()
    return Verdict(
        signals={"verdict": "accepted" if ok else "rejected"}, output={"ok": ok}, diagnostic={}
    )


def accept(value: None, context: WorkerContext) -> Verdict:
    _start(value, context)
    _done(context)
    return Verdict(signals={"verdict": "accepted"})


def count_up(value: dict[str, int], context: WorkerContext) -> dict[str, int]:
    _start(value, context)
    _done(context)
    return {"count": value["count"] + 1}


def count_check(value: dict[str, int], context: WorkerContext) -> Verdict:
    _start(value, context)
    _done(context)
    return Verdict(signals={"verdict": "accepted" if value["count"] >= 2 else "rejected"})


def length(value: dict[str, str], context: WorkerContext) -> dict[str, int]:
    _start(value, context)
    _done(context)
    return {"length": len(value["text"])}


def announce_then_hang(value: dict[str, int], context: WorkerContext) -> dict[str, int]:
    _start(value, context)
    print(f"working on {value['value']}", flush=True)
    time.sleep(120)
    return value


def talk(value: dict[str, int], context: WorkerContext) -> dict[str, int]:
    """Prints the behaviour's ``lines``, then ``NAME=<value>`` for each name in
    ``print_env`` (read from its own environment, declared or not), then, once past
    ``wait_for_file``, its ``after`` lines; returns value + 1."""
    behaviour = _behaviour(context)
    for line in behaviour.get("lines", []):
        print(line, flush=True)
    for name in behaviour.get("print_env", []):
        print(f"{name}={os.environ.get(name, '')}", flush=True)
    _start(value, context)
    for line in behaviour.get("after", []):
        print(line, flush=True)
    _done(context)
    return {"value": value["value"] + 1}


async def async_inc(value: dict[str, int], context: WorkerContext) -> dict[str, int]:
    """``inc`` as a coroutine: it yields to its event loop before answering."""
    asyncio.get_running_loop()
    await asyncio.sleep(0)
    _start(value, context)
    print(f"async inc {value['value']}")
    _done(context)
    return {"value": value["value"] + 1}


async def async_judge(value: dict[str, int], context: WorkerContext) -> Verdict:
    await asyncio.sleep(0)
    return judge(value, context)


class _AwaitableJudge:
    """A callable object whose ``__call__`` is a coroutine (not a coroutine function)."""

    async def __call__(self, value: dict[str, int], context: WorkerContext) -> Verdict:
        await asyncio.sleep(0)
        return judge(value, context)


awaitable_judge = _AwaitableJudge()
