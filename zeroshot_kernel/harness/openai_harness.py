"""The ``openai`` harness: any server speaking OpenAI-style chat completions.

Hosted APIs, vLLM, Ollama and llama.cpp's server all answer ``POST {base}/chat/completions``.
The base URL and key come from a named connection: the first non-``github`` connection the
node declares, else the one named by the provider, else ``openai``. A connection's
``baseUrl`` wins; the well-known ``openai`` connection also honours ``OPENAI_BASE_URL``.
The key is optional: without one no ``Authorization`` header is sent (a local llama.cpp,
Ollama or vLLM server needs none), and a server that then answers 401 or 403 ends the
execution as ``authentication_required``, naming the variable to set.

Every request carries ``max_tokens`` (the node's ``maxTokens``, else the plan's, else
:data:`~zeroshot_kernel.harness.plan.DEFAULT_MAX_TOKENS`). A reply cut at that limit
(``finish_reason: length``) is never accepted: it is answered with a correction turn asking
for a shorter reply, and ends as ``malformed`` when the corrections run out.

Each turn asks for structured output (``response_format: json_schema``) with the schema
generated from the node's declared types, so a server that enforces schemas answers in
shape the first time; the reply is still checked, and corrected, like any agent's.
Rate limits (429), server errors (500, 502, 503, 504), connection errors and timeouts are
retried under :mod:`zeroshot_kernel.retry`'s policy (bounded attempts and time, exponential
backoff with jitter, the server's ``Retry-After`` honoured); a storm of them ends in
``crash``. Token usage is summed over the execution's requests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

import httpx

from zeroshot_kernel.contract.outcome import error
from zeroshot_kernel.harness.agent_cli import auth_refusal, crash, effort_of, model_of, provider_of
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult, LogSink
from zeroshot_kernel.harness.conversation import Turn, converse
from zeroshot_kernel.harness.plan import (
    DEFAULT_MAX_TOKENS,
    AgentBinding,
    Connection,
    RuntimePlan,
)
from zeroshot_kernel.harness.prompt import is_strict_schema, response_schema
from zeroshot_kernel.harness.sessions import SessionPool
from zeroshot_kernel.ledger.events import Usage
from zeroshot_kernel.retry import (
    RetriesExhausted,
    RetryNotice,
    RetryPolicy,
    retry_after_s,
    retry_async,
    transient_http_error,
    transient_response,
)

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
}
BASE_URL_ENV = {"openai": "OPENAI_BASE_URL"}
BACKOFF_ENV = "ZEROSHOT_HTTP_BACKOFF_S"
"""First retry delay in seconds (doubling each time); tests shorten it."""
MAX_REQUEST_ATTEMPTS = 5
DEFAULT_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
REQUEST_BUDGET_S = 900.0
"""No retry of one completion starts later than this after its first request."""
SYSTEM_PROMPT = (
    "You are one step of an automated workflow. Follow the task and answer exactly as the "
    "response contract says."
)
_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}
_TIMEOUT = httpx.Timeout(600.0, connect=15.0)

Messages = list[dict[str, Any]]


@dataclass(frozen=True)
class Endpoint:
    """Where to send requests, and the key (never logged, never recorded); ``key_env``
    names the variable the key is read from."""

    name: str
    base_url: str
    key: str | None
    key_env: str | None = None

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"} if self.key else {}


def connection_name(binding: AgentBinding | None, plan: RuntimePlan) -> str:
    declared = [name for name in (binding.connections if binding else []) if name != "github"]
    if declared:
        return declared[0]
    provider = (binding.provider if binding else None) or plan.provider
    if provider and plan.connection(provider) is not None:
        return provider
    return "openai"


def base_url_of(name: str, connection: Connection | None) -> str | None:
    if connection is not None and connection.base_url:
        return connection.base_url.rstrip("/")
    override = os.environ.get(BASE_URL_ENV.get(name, ""), "")
    return (override or DEFAULT_BASE_URLS.get(name, "")).rstrip("/") or None


def endpoint_for(request: ExecutionRequest) -> Endpoint | HarnessResult:
    binding = request.binding if isinstance(request.binding, AgentBinding) else None
    name = connection_name(binding, request.plan)
    connection = request.plan.connection(name)
    base = base_url_of(name, connection)
    if base is None:
        return HarnessResult(
            error("refusal"),
            f"connection '{name}' has no base URL; set runtime.connections.{name}.baseUrl",
        )
    # No key is fine: local servers need none; a server that wants one answers 401/403.
    key = request.env.get(connection.env) if connection is not None else None
    return Endpoint(name, base, key or None, connection.env if connection is not None else None)


def max_tokens_of(request: ExecutionRequest) -> int:
    binding = request.binding if isinstance(request.binding, AgentBinding) else None
    if binding is not None and binding.max_tokens is not None:
        return binding.max_tokens
    return request.plan.max_tokens or DEFAULT_MAX_TOKENS


def backoff_s() -> float:
    try:
        return max(0.0, float(os.environ.get(BACKOFF_ENV, DEFAULT_BACKOFF_S)))
    except ValueError:
        return DEFAULT_BACKOFF_S


def request_policy() -> RetryPolicy:
    """How one completion request is retried (the first delay from ``$ZEROSHOT_HTTP_BACKOFF_S``)."""
    return RetryPolicy(
        attempts=MAX_REQUEST_ATTEMPTS,
        first_delay_s=backoff_s(),
        max_delay_s=MAX_BACKOFF_S,
        budget_s=REQUEST_BUDGET_S,
    )


class OpenAIHarness:
    """Runs executions against OpenAI-compatible chat-completion endpoints."""

    def __init__(self) -> None:
        self._client: httpx.AsyncClient | None = None
        self._sessions: SessionPool[Messages] = SessionPool()

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=_TIMEOUT, trust_env=False)
        return self._client

    async def execute(self, request: ExecutionRequest) -> HarnessResult:
        endpoint = endpoint_for(request)
        if isinstance(endpoint, HarnessResult):
            return endpoint
        model = model_of(request) or await self._served_model(endpoint)
        if isinstance(model, HarnessResult):
            return model
        body = _request_body(request, model)

        async def send(prompt: str, session: Messages | None) -> Turn[Messages]:
            history = [
                *(session or [{"role": "system", "content": SYSTEM_PROMPT}]),
                {"role": "user", "content": prompt},
            ]
            turn = await post_completion(
                self._http(), endpoint, {**body, "messages": history}, request.log
            )
            if turn.text is not None:
                return replace(
                    turn, session=[*history, {"role": "assistant", "content": turn.text}]
                )
            return turn

        conversation = await converse(request, send, self._sessions.take(request))
        self._sessions.keep(request, conversation.session)
        return conversation.result

    async def _served_model(self, endpoint: Endpoint) -> str | HarnessResult:
        """The model when none is named: the one the server lists at ``GET /models``, if
        it lists exactly one (a local llama.cpp, vLLM or Ollama server with one loaded)."""
        problem = "name one with --model (runtime.model)"
        try:
            response = await self._http().get(
                f"{endpoint.base_url}/models", headers=endpoint.headers()
            )
            listed = response.json().get("data") if response.status_code < 400 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            listed = None
        ids = (
            sorted({str(m.get("id")) for m in listed if isinstance(m, dict) and m.get("id")})
            if isinstance(listed, list)
            else []
        )
        if len(ids) == 1:
            return ids[0]
        offered = (
            f"the server lists {len(ids)} models ({', '.join(ids[:5])}"
            f"{', ...' if len(ids) > 5 else ''})"
            if ids
            else f"{endpoint.name} lists no models at {endpoint.base_url}/models"
        )
        return HarnessResult(
            error("refusal"), f"no model is set for this node and {offered}: {problem}"
        )

    async def close(self) -> None:
        self._sessions.clear()
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _request_body(request: ExecutionRequest, model: str) -> dict[str, Any]:
    schema = response_schema(request.node)
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens_of(request),
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "response",
                "schema": schema,
                "strict": is_strict_schema(schema),
            },
        },
    }
    effort = effort_of(request)
    if effort and provider_of(request, "openai") in ("openai", "openrouter"):
        body["reasoning_effort"] = _EFFORTS[effort]
    return body


async def post_completion(
    client: httpx.AsyncClient, endpoint: Endpoint, body: dict[str, Any], log: LogSink
) -> Turn[Messages]:
    """One chat completion, retried on transient failures (see :func:`request_policy`)."""
    url = f"{endpoint.base_url}/chat/completions"

    def announce(retry: RetryNotice) -> None:
        log(
            "system",
            f"{endpoint.name}: {_failure_text(retry.error, retry.result)[:200]}; "
            f"retry {retry.attempt} in {retry.delay_s:.2f} s",
        )

    try:
        response = await retry_async(
            lambda: client.post(url, json=body, headers=endpoint.headers()),
            request_policy(),
            transient_error=transient_http_error,
            transient_result=transient_response,
            retry_after=retry_after_s,
            on_retry=announce,
        )
    except RetriesExhausted as exhausted:
        return Turn(
            failure=crash(
                f"{endpoint.name} kept failing after {exhausted.attempts} requests; last: "
                f"{_failure_text(exhausted.error, exhausted.result)}"
            )
        )
    except httpx.HTTPError as failure:  # not worth another attempt (a bad URL, a proxy)
        return Turn(
            failure=crash(
                f"{endpoint.name} could not be asked: {type(failure).__name__}: {failure}"
            )
        )
    if response.status_code < 400:
        return read_completion(response, body.get("max_tokens"))
    if response.status_code in (401, 403):
        return Turn(failure=auth_refusal(_refused(endpoint, response)))
    return Turn(
        failure=crash(
            f"{endpoint.name} rejected the request (HTTP {response.status_code}): "
            f"{_error_text(response)}"
        )
    )


def _failure_text(failure: BaseException | None, response: httpx.Response | None) -> str:
    if failure is not None:
        return f"{type(failure).__name__}: {failure}"
    if response is not None:
        return f"HTTP {response.status_code}: {_error_text(response)}"
    return "no reply"


def _refused(endpoint: Endpoint, response: httpx.Response) -> str:
    status = response.status_code
    env = endpoint.key_env or "the connection's key variable"
    if endpoint.key is None:
        return (
            f"{endpoint.name} wants a key (HTTP {status}) and none was sent: set {env} in "
            f"the environment (the connection '{endpoint.name}' reads it): "
            f"{_error_text(response)}"
        )
    return f"{endpoint.name} refused the key in {env} (HTTP {status}): {_error_text(response)}"


def read_completion(response: httpx.Response, max_tokens: int | None = None) -> Turn[Messages]:
    try:
        document = response.json()
        choice = document["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return Turn(
            failure=crash(f"the endpoint's reply is not a chat completion: {response.text[:200]!r}")
        )
    usage = _usage(document.get("usage") if isinstance(document, dict) else None)
    if not isinstance(message, dict):
        return Turn(failure=crash("the completion has no message"), usage=usage)
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        return Turn(
            failure=HarnessResult(
                error("refusal", "policy_denied"), f"the model refused: {refusal}"[:1000]
            ),
            usage=usage,
        )
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if isinstance(choice, dict) and choice.get("finish_reason") == "length":
        limit = f"max_tokens ({max_tokens} tokens)" if max_tokens else "max_tokens"
        return Turn(
            text=content if isinstance(content, str) else "",
            usage=usage,
            defect=f"the reply was cut at the token limit, {limit}, before it was "
            "complete: send a shorter reply that fits within it",
        )
    if not isinstance(content, str):
        return Turn(failure=crash("the completion's message has no content"), usage=usage)
    return Turn(text=content, usage=usage)


def _usage(reported: Any) -> Usage | None:
    if not isinstance(reported, dict):
        return None
    prompt = reported.get("prompt_tokens")
    completion = reported.get("completion_tokens")
    cost = reported.get("cost")
    return Usage(
        input_tokens=prompt if isinstance(prompt, int) else None,
        output_tokens=completion if isinstance(completion, int) else None,
        cost_usd=float(cost)
        if isinstance(cost, int | float) and not isinstance(cost, bool)
        else None,
    )


def _error_text(response: httpx.Response) -> str:
    try:
        document = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(document, dict):
        problem = document.get("error")
        if isinstance(problem, dict) and isinstance(problem.get("message"), str):
            return str(problem["message"])[:200]
    return response.text[:200]
