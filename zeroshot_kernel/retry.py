"""One retry policy for transient failures, built on tenacity.

A :class:`RetryPolicy` bounds the attempts and the total time, waits with exponential
backoff plus jitter between attempts, and honours a server's ``Retry-After`` (seconds or
an HTTP date) when it sends one, capped at :data:`MAX_RETRY_AFTER_S` and at what is left of
the budget. The caller says what is transient: :func:`retry_async` and :func:`retry_sync`
take predicates over exceptions and results. For HTTP, :func:`transient_http_error` (a
connection error, a timeout) and :func:`transient_response` (429, 500, 502, 503, 504)
are the usual ones, and :func:`retry_after_s` reads the header.

What is not transient is never retried: a non-transient exception propagates as it is, a
non-transient result is returned. When the attempts or the budget run out on a transient
failure, :class:`RetriesExhausted` says how many attempts were made and what the last
one gave.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NoReturn, TypeVar

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    retry_if_result,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
    wait_random,
)

from zeroshot_kernel.exceptions import Unavailable

T = TypeVar("T")

TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})
"""HTTP statuses worth another attempt: rate limited, or the server failing for now."""
MAX_RETRY_AFTER_S = 60.0
"""The longest ``Retry-After`` honoured; a server asking for more gets this much."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry.

    ``attempts`` counts the first try. The wait before retry ``n`` is ``first_delay_s *
    2**(n-1)`` plus a random jitter of up to ``first_delay_s``, capped at ``max_delay_s``;
    a ``Retry-After`` replaces it (up to ``max_retry_after_s``). Every wait ends by
    ``budget_s`` after the first attempt began; once that has passed, no attempt follows.
    """

    attempts: int = 5
    first_delay_s: float = 1.0
    max_delay_s: float = 30.0
    budget_s: float = 900.0
    max_retry_after_s: float = MAX_RETRY_AFTER_S


@dataclass(frozen=True)
class RetryNotice:
    """What an ``on_retry`` callback is told before the wait: the attempt that failed
    (from 1), how long the wait is, and the failure (an exception or a result)."""

    attempt: int
    delay_s: float
    error: BaseException | None
    result: Any


class RetriesExhausted(Unavailable):
    """Every attempt allowed (by count or by time) failed transiently."""

    def __init__(self, attempts: int, error: BaseException | None, result: Any) -> None:
        self.attempts = attempts
        self.error = error
        """The last attempt's exception, if it raised."""
        self.result = result
        """The last attempt's result, if it returned (a transient one)."""
        last = f"{type(error).__name__}: {error}" if error is not None else repr(result)
        super().__init__(f"gave up after {attempts} attempts; last: {last}"[:1000])


def _never(_: Any) -> bool:
    return False


def _no_hint(_: Any) -> float | None:
    return None


def _arguments(
    policy: RetryPolicy,
    *,
    transient_error: Callable[[BaseException], bool],
    transient_result: Callable[[Any], bool],
    retry_after: Callable[[Any], float | None],
    on_retry: Callable[[RetryNotice], None] | None,
) -> dict[str, Any]:
    backoff = wait_exponential(
        multiplier=policy.first_delay_s, max=policy.max_delay_s
    ) + wait_random(0, policy.first_delay_s)

    def wait(state: RetryCallState) -> float:
        outcome = state.outcome
        hint = None
        if outcome is not None and not outcome.failed:
            hint = retry_after(outcome.result())
        if hint is not None:
            delay = min(hint, policy.max_retry_after_s)
        else:
            delay = min(backoff(state), policy.max_delay_s)
        left = policy.budget_s - (time.monotonic() - state.start_time)
        return max(0.0, min(delay, left))

    def before_sleep(state: RetryCallState) -> None:
        if on_retry is None or state.outcome is None:
            return
        failed = state.outcome.failed
        on_retry(
            RetryNotice(
                attempt=state.attempt_number,
                delay_s=state.next_action.sleep if state.next_action is not None else 0.0,
                error=state.outcome.exception() if failed else None,
                result=None if failed else state.outcome.result(),
            )
        )

    def give_up(state: RetryCallState) -> NoReturn:
        assert state.outcome is not None
        failed = state.outcome.failed
        error = state.outcome.exception() if failed else None
        raise RetriesExhausted(
            state.attempt_number, error, None if failed else state.outcome.result()
        ) from error

    return {
        "stop": stop_after_attempt(max(1, policy.attempts)) | stop_after_delay(policy.budget_s),
        "wait": wait,
        "retry": retry_if_exception(transient_error) | retry_if_result(transient_result),
        "before_sleep": before_sleep,
        "retry_error_callback": give_up,
    }


async def retry_async(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    transient_error: Callable[[BaseException], bool] = _never,
    transient_result: Callable[[T], bool] = _never,
    retry_after: Callable[[T], float | None] = _no_hint,
    on_retry: Callable[[RetryNotice], None] | None = None,
) -> T:
    """``await call()`` until it succeeds or fails for good, within ``policy``.

    Raises :class:`RetriesExhausted` when the last allowed attempt failed transiently; any
    other exception of ``call`` propagates at once. ``retry_after`` reads a wait the
    failing result asks for (a ``Retry-After``); ``on_retry`` hears of each retry."""
    retrying = AsyncRetrying(
        **_arguments(
            policy,
            transient_error=transient_error,
            transient_result=transient_result,
            retry_after=retry_after,
            on_retry=on_retry,
        )
    )

    async def attempt() -> T:
        return await call()

    result: T = await retrying(attempt)
    return result


def retry_sync(
    call: Callable[[], T],
    policy: RetryPolicy,
    *,
    transient_error: Callable[[BaseException], bool] = _never,
    transient_result: Callable[[T], bool] = _never,
    retry_after: Callable[[T], float | None] = _no_hint,
    on_retry: Callable[[RetryNotice], None] | None = None,
) -> T:
    """:func:`retry_async` for a blocking ``call`` (the waits block this thread)."""
    retrying = Retrying(
        **_arguments(
            policy,
            transient_error=transient_error,
            transient_result=transient_result,
            retry_after=retry_after,
            on_retry=on_retry,
        )
    )
    result: T = retrying(call)
    return result


def transient_http_error(error: BaseException) -> bool:
    """A failure to connect, a timeout, or a connection dropped before the reply: another
    attempt may succeed. (A malformed URL or an unsupported protocol will not.)"""
    return isinstance(
        error, httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError
    )


def transient_response(response: httpx.Response) -> bool:
    return response.status_code in TRANSIENT_STATUS


def retry_after_s(response: httpx.Response) -> float | None:
    """The wait a response's ``Retry-After`` asks for, in seconds (from a number of seconds
    or an HTTP date), or ``None`` when it has none that can be read."""
    return parse_retry_after(response.headers.get("retry-after"))


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)
