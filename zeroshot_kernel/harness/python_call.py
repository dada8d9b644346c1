"""Calling a Python worker and turning what it returns (or raises) into an outcome.

Shared by the in-process harness and the worker processes, so both behave the same.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import traceback
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from zeroshot_kernel.exceptions import ZeroshotError
from zeroshot_kernel.workers import Refusal, Verdict, WorkerContext

Reply = tuple[str, Any, str | None]
"""(status, payload, detail): ``("verified", output, None)``,
``("verifier", {output, signals, diagnostic}, None)``, ``("refusal", reason, message)``
or ``("crash", None, message)``."""


def resolve(path: str) -> Callable[..., Any]:
    module_name, _, attribute = path.partition(":")
    target = getattr(importlib.import_module(module_name), attribute)
    if not callable(target):
        raise TypeError(f"{path} is not callable")
    return target  # type: ignore[no-any-return]


def wants_context(function: Callable[..., Any]) -> bool:
    try:
        return "context" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


async def call_worker(
    function: Callable[..., Any], value: Any, context: WorkerContext, *, verifier: bool
) -> Reply:
    """Await (or run in a thread) one worker call and classify the result."""
    kwargs = {"context": context} if wants_context(function) else {}
    try:
        if inspect.iscoroutinefunction(function):
            result = await function(value, **kwargs)
        else:
            result = await asyncio.to_thread(function, value, **kwargs)
            if inspect.isawaitable(result):  # an object with ``async def __call__``
                result = await result
    except Refusal as refusal:
        return _refused(refusal)
    except Exception as error:
        return _crashed(error)
    return classify(result, verifier=verifier)


def call_worker_here(
    function: Callable[..., Any], value: Any, context: WorkerContext, *, verifier: bool
) -> Reply:
    """:func:`call_worker` on this thread, for a worker process that has nothing else to
    run meanwhile: a sync function is called directly, with no event loop and no thread
    started for it (each call's loop and thread cost as much as a short agent's hand-off);
    a coroutine function (or an awaitable result) gets a loop of its own."""
    if inspect.iscoroutinefunction(function):
        return asyncio.run(call_worker(function, value, context, verifier=verifier))
    kwargs = {"context": context} if wants_context(function) else {}
    try:
        result = function(value, **kwargs)
        if inspect.isawaitable(result):  # an object with ``async def __call__``
            result = asyncio.run(_awaited(result))
    except Refusal as refusal:
        return _refused(refusal)
    except Exception as error:
        return _crashed(error)
    return classify(result, verifier=verifier)


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _refused(refusal: Refusal) -> Reply:
    return ("refusal", refusal.reason, str(refusal))


def _crashed(error: Exception) -> Reply:
    return ("crash", None, _described(error))


def classify(result: Any, *, verifier: bool) -> Reply:
    if not verifier:
        if isinstance(result, Verdict):
            return ("malformed", None, "a step returned a Verdict; only verifiers do")
        return ("verified", result, None)
    if isinstance(result, Verdict):
        return ("verifier", _verdict(result.output, result.signals, result.diagnostic), None)
    if isinstance(result, Mapping) and set(result) == {"output", "signals", "diagnostic"}:
        signals = result["signals"]
        if isinstance(signals, Mapping):
            return ("verifier", _verdict(result["output"], signals, result["diagnostic"]), None)
    detail = "a verifier must return a Verdict (or {output, signals, diagnostic})"
    return ("malformed", None, detail)


def _verdict(output: Any, signals: Mapping[str, Any], diagnostic: Any) -> dict[str, Any]:
    return {"output": output, "signals": dict(signals), "diagnostic": diagnostic}


def _described(error: BaseException) -> str:
    """The error and, unless it is one of the project's own (whose messages are written to
    be read as they are), the line that raised it: a worker's bug is found from there."""
    frames = traceback.extract_tb(error.__traceback__)
    own = isinstance(error, ZeroshotError)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames and not own else ""
    return f"{type(error).__name__}: {error}{where}"
