"""The one retry policy (``zeroshot_kernel.retry``), through the openai harness's requests.

The server is ``chat_server``: a loopback HTTP server on 127.0.0.1 that stands in for an
OpenAI-compatible API (a hosted one, vLLM, Ollama, llama.cpp's server); it is not a model.
Times are measured with the monotonic clock and only lower bounds are asserted.
"""

from __future__ import annotations

import asyncio
import email.utils
import socket
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from chat_server import chat_server
from engine_support import finish, make_workspace
from harness_support import one_step

from zeroshot_kernel.harness.base import LogSink
from zeroshot_kernel.harness.conversation import Turn
from zeroshot_kernel.harness.openai_harness import (
    MAX_REQUEST_ATTEMPTS,
    Endpoint,
    Messages,
    post_completion,
)
from zeroshot_kernel.ledger.events import NodeCompleted
from zeroshot_kernel.retry import (
    RetriesExhausted,
    RetryPolicy,
    parse_retry_after,
    retry_sync,
)

BODY: dict[str, Any] = {
    "model": "standin",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "hello"}],
}
ANSWER = {"content": '{"value": 2}'}


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Backoff waits of 10 ms, so that a longer wait can only come from Retry-After."""
    monkeypatch.setenv("ZEROSHOT_HTTP_BACKOFF_S", "0.01")


def complete(base_url: str, *, timeout: float = 30.0) -> tuple[Turn[Messages], list[str]]:
    """One completion as the harness makes it; returns the turn and the log lines."""
    lines: list[str] = []
    log: LogSink = lambda _stream, line: lines.append(line)  # noqa: E731

    async def go() -> Turn[Messages]:
        async with httpx.AsyncClient(timeout=timeout, trust_env=False) as client:
            return await post_completion(client, Endpoint("standin", base_url, None), BODY, log)

    return asyncio.run(go()), lines


def failure_detail(turn: Turn[Messages]) -> str:
    assert turn.failure is not None
    assert turn.failure.outcome.to_wire() == {
        "status": "error",
        "code": "crash",
        "reason": "declared_failure",
    }
    assert turn.failure.detail is not None
    return turn.failure.detail


def test_a_429_with_retry_after_is_retried_no_sooner_than_asked() -> None:
    with chat_server({"status": 429, "retry_after": 1}, ANSWER) as server:
        started = time.monotonic()
        turn, lines = complete(server.base_url)
        elapsed = time.monotonic() - started
    assert turn.failure is None and turn.text == '{"value": 2}'
    assert len(server.completions()) == 2
    assert elapsed >= 1.0
    assert any("HTTP 429" in line and "retry 1 in 1.00 s" in line for line in lines)


def test_a_retry_after_date_is_honoured() -> None:
    when = email.utils.formatdate(time.time() + 2, usegmt=True)  # whole seconds: 1-2 s away
    with chat_server({"status": 503, "retry_after": when}, ANSWER) as server:
        started = time.monotonic()
        turn, _ = complete(server.base_url)
        elapsed = time.monotonic() - started
    assert turn.text == '{"value": 2}'
    assert elapsed >= 0.5


def test_retry_after_reads_seconds_and_dates_and_ignores_nonsense() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    later = email.utils.format_datetime(now + timedelta(seconds=7), usegmt=True)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 2.5 ") == 2.5
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after(later, now=now) == 7.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=now) == 0.0  # past
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_a_long_retry_after_is_capped_by_the_budget() -> None:
    """A server asking for an hour gets at most what is left of the budget."""
    answers = iter([503, 503, 200])
    policy = RetryPolicy(attempts=3, first_delay_s=0.01, budget_s=0.3)
    started = time.monotonic()
    with pytest.raises(RetriesExhausted) as exhausted:
        retry_sync(
            lambda: next(answers),
            policy,
            transient_result=lambda s: s == 503,
            retry_after=lambda _: 3600.0,
        )
    assert exhausted.value.result == 503
    assert exhausted.value.attempts >= 2
    assert time.monotonic() - started >= 0.3


def test_a_503_twice_then_200_succeeds() -> None:
    with chat_server({"status": 503}, {"status": 503}, ANSWER) as server:
        turn, lines = complete(server.base_url)
    assert turn.text == '{"value": 2}'
    assert len(server.completions()) == 3
    assert sum("HTTP 503" in line for line in lines) == 2


def test_a_400_is_not_retried() -> None:
    with chat_server({"status": 400}, ANSWER) as server:
        turn, lines = complete(server.base_url)
    assert "rejected the request (HTTP 400)" in failure_detail(turn)
    assert len(server.completions()) == 1
    assert lines == []


def test_attempts_are_bounded_and_end_in_crash() -> None:
    with chat_server({"status": 503}) as server:
        turn, lines = complete(server.base_url)
    detail = failure_detail(turn)
    assert f"kept failing after {MAX_REQUEST_ATTEMPTS} requests" in detail
    assert "HTTP 503" in detail
    assert len(server.completions()) == MAX_REQUEST_ATTEMPTS
    assert len(lines) == MAX_REQUEST_ATTEMPTS - 1


def test_a_dead_server_is_retried_then_crashes() -> None:
    with socket.socket() as unused:  # a port nothing listens on once this closes
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    turn, lines = complete(f"http://127.0.0.1:{port}/v1")
    detail = failure_detail(turn)
    assert f"kept failing after {MAX_REQUEST_ATTEMPTS} requests; last: ConnectError" in detail
    assert len(lines) == MAX_REQUEST_ATTEMPTS - 1


def test_a_reply_slower_than_the_timeout_is_retried_then_fails_cleanly() -> None:
    release = threading.Event()
    try:
        with chat_server({"hold": release, **ANSWER}) as server:
            turn, lines = complete(server.base_url, timeout=0.2)
            release.set()
    finally:
        release.set()
    detail = failure_detail(turn)
    assert "ReadTimeout" in detail and f"after {MAX_REQUEST_ATTEMPTS} requests" in detail
    assert len(server.completions()) == MAX_REQUEST_ATTEMPTS
    assert all("ReadTimeout" in line for line in lines)


def test_a_non_transient_error_is_not_retried() -> None:
    calls = 0

    def broken() -> None:
        nonlocal calls
        calls += 1
        raise KeyError("not transient")

    with pytest.raises(KeyError):
        retry_sync(
            broken,
            RetryPolicy(attempts=5, first_delay_s=0.01),
            transient_error=lambda e: isinstance(e, OSError),
        )
    assert calls == 1


@pytest.mark.slow  # a real run through a detached controller
def test_a_server_error_storm_in_a_run_ends_in_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness's outcome on a server that keeps answering 503: ``crash``, as always."""
    monkeypatch.setenv("ZS_RETRY_KEY", "local-key")
    ws = make_workspace(tmp_path)
    with chat_server({"status": 503}) as server:
        graph, plan = one_step("openai")
        plan["connections"] = {"local": {"env": "ZS_RETRY_KEY", "baseUrl": server.base_url}}
        for binding in plan["nodes"].values():
            binding["connections"] = ["local"]
        run = ws.submit((graph, plan), {"value": 1})
        finish(run)
    [completed] = [e for _, e in run.events() if isinstance(e, NodeCompleted)]
    assert completed.completion.outcome.to_wire() == {
        "status": "error",
        "code": "crash",
        "reason": "declared_failure",
    }
    assert completed.detail is not None
    assert f"after {MAX_REQUEST_ATTEMPTS} requests" in completed.detail
    assert len(server.completions()) == MAX_REQUEST_ATTEMPTS
