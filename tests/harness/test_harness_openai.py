"""The openai harness, end to end: real runs against a loopback chat-completions server
(``chat_server``, a stand-in for a hosted API) on 127.0.0.1."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from chat_server import chat_server
from engine_support import finish, make_workspace, wire
from harness_support import (
    controller_logs,
    judged_step,
    ledger_bytes,
    no_env,
    one_step,
    refine_loop,
)

from zeroshot_kernel.client import Run
from zeroshot_kernel.ledger.events import NodeCompleted

# slow: real runs against a loopback model server
pytestmark = pytest.mark.slow

KEY_ENV = "ZS_LOCAL_LLM_KEY"


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZEROSHOT_HTTP_BACKOFF_S", "0.01")


def with_connection(
    scenario: tuple[dict[str, Any], dict[str, Any]],
    base_url: str,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every node uses the ``local`` connection: ``base_url`` and ``$ZS_LOCAL_LLM_KEY``."""
    graph, plan = scenario
    plan["connections"] = {"local": {"env": KEY_ENV, "baseUrl": base_url}}
    for binding in plan["nodes"].values():
        binding["connections"] = ["local"]
    return graph, plan


def completions(run: Run) -> list[NodeCompleted]:
    return [e for _, e in run.events() if isinstance(e, NodeCompleted)]


def outcome(run: Run) -> dict[str, Any]:
    [completed] = completions(run)
    return completed.completion.outcome.to_wire()


def test_structured_output_from_the_declared_type_and_usage_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "local-key-1234")
    ws = make_workspace(tmp_path)
    with chat_server({"reply": "increment"}) as server:
        run = ws.submit(with_connection(one_step("openai"), server.base_url), {"value": 1})
        assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 2}}
    [request] = server.completions()
    assert request["headers"]["Authorization"] == "Bearer local-key-1234"
    body = request["body"]
    assert body["model"] == "gpt-test-mini"
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "response",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {"value": {"type": "integer"}},
                "required": ["value"],
                "additionalProperties": False,
            },
        },
    }
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "Add one to value." in body["messages"][1]["content"]
    [completed] = completions(run)
    assert completed.usage is not None
    assert (completed.usage.input_tokens, completed.usage.output_tokens) == (11, 7)


def test_a_verifier_answers_with_signals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "local-key-1234")
    ws = make_workspace(tmp_path)
    with chat_server({"reply": "gate", "at": 3}) as server:
        run = ws.submit(with_connection(judged_step("openai"), server.base_url), {"value": 2})
        assert wire(finish(run)) == {"status": "failed", "reason": "rejected"}
    schema = server.completions()[0]["body"]["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["output", "signals", "diagnostic"]
    assert schema["properties"]["signals"]["properties"] == {
        "verdict": {"type": "string", "enum": ["accepted", "rejected"]}
    }


def test_the_openai_connection_honours_openai_base_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdef")
    ws = make_workspace(tmp_path)
    with chat_server({"reply": "increment"}) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        run = ws.submit(one_step("openai", connections=["openai"]), {"value": 5})
        assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 6}}
    assert server.completions()[0]["headers"]["Authorization"] == "Bearer sk-test-abcdef"


def test_a_rate_limit_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "local-key-1234")
    ws = make_workspace(tmp_path)
    with chat_server({"status": 429, "retry_after": 0}, {"reply": "increment"}) as server:
        run = ws.submit(with_connection(one_step("openai"), server.base_url), {"value": 1})
        assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 2}}
    assert len(server.completions()) == 2
    assert any("HTTP 429" in log.line and "retry 1" in log.line for _, log in run.logs())


def test_a_server_error_storm_ends_in_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "local-key-1234")
    ws = make_workspace(tmp_path)
    with chat_server({"status": 500}) as server:
        run = ws.submit(with_connection(one_step("openai"), server.base_url), {"value": 1})
        finish(run)
    assert outcome(run) == {"status": "error", "code": "crash", "reason": "declared_failure"}
    assert len(server.completions()) == 5
    [completed] = completions(run)
    assert completed.detail is not None and "after 5 requests" in completed.detail


def test_a_rejected_key_is_authentication_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "local-key-1234")
    ws = make_workspace(tmp_path)
    with chat_server({"status": 401}) as server:
        run = ws.submit(with_connection(one_step("openai"), server.base_url), {"value": 1})
        finish(run)
    assert outcome(run) == {
        "status": "error",
        "code": "refusal",
        "reason": "authentication_required",
    }
    assert len(server.completions()) == 1
    [completed] = completions(run)
    assert completed.detail is not None and f"refused the key in {KEY_ENV}" in completed.detail


def test_without_a_key_no_authorization_header_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local server (llama.cpp, Ollama, vLLM) needs no key: none is sent, the run works."""
    no_env(monkeypatch, KEY_ENV, "OPENAI_API_KEY")
    ws = make_workspace(tmp_path)
    with chat_server({"reply": "increment"}) as server:
        declared = with_connection(one_step("openai"), server.base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        undeclared = one_step("openai")  # the default `openai` connection, not declared
        first = ws.submit(declared, {"value": 1})
        second = ws.submit(undeclared, {"value": 1})
        assert wire(finish(first)) == {"status": "succeeded", "output": {"value": 2}}
        assert wire(finish(second)) == {"status": "succeeded", "output": {"value": 2}}
    assert len(server.completions()) == 2
    for request in server.completions():
        assert "authorization" not in {name.lower() for name in request["headers"]}


def test_a_server_wanting_a_key_when_none_is_set_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_env(monkeypatch, KEY_ENV, "OPENAI_API_KEY")
    ws = make_workspace(tmp_path)
    with chat_server({"status": 401}) as server:
        graph, plan = one_step("openai", connections=["openai"])
        plan["connections"] = {"openai": {"env": "OPENAI_API_KEY", "baseUrl": server.base_url}}
        run = ws.submit((graph, plan), {"value": 1})
        finish(run)
    assert outcome(run) == {
        "status": "error",
        "code": "refusal",
        "reason": "authentication_required",
    }
    [request] = server.completions()  # asked once, not retried
    assert "authorization" not in {name.lower() for name in request["headers"]}
    [completed] = completions(run)
    assert completed.detail is not None
    assert "none was sent" in completed.detail and "set OPENAI_API_KEY" in completed.detail


def test_every_request_carries_max_tokens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """4096 by default; the plan's ``maxTokens``, and a node's over the plan's."""
    monkeypatch.setenv(KEY_ENV, "local-key-1234")
    ws = make_workspace(tmp_path)
    with chat_server({"reply": "increment"}) as server:
        default = ws.submit(with_connection(one_step("openai"), server.base_url), {"value": 1})
        assert wire(finish(default)) == {"status": "succeeded", "output": {"value": 2}}
        graph, plan = with_connection(
            refine_loop("openai", "execution", "execution"), server.base_url
        )
        plan["maxTokens"] = 300
        plan["nodes"]["gate"]["maxTokens"] = 20
        plan["nodes"]["gate"]["model"] = "gate-model"
        configured = ws.submit((graph, plan), {"value": 0})
        assert wire(finish(configured)) == {"status": "succeeded", "output": {"value": 3}}
    first, *rest = [r["body"] for r in server.completions()]
    assert first["max_tokens"] == 4096
    assert {(b["model"], b["max_tokens"]) for b in rest} == {
        ("gpt-test-mini", 300),
        ("gate-model", 20),
    }


def test_a_reply_cut_at_max_tokens_is_corrected_then_malformed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "local-key-1234")
    ws = make_workspace(tmp_path)
    # A cut reply may even parse: it is never accepted.
    with chat_server({"content": '{"value": 2}', "finish_reason": "length"}) as server:
        graph, plan = with_connection(one_step("openai"), server.base_url)
        plan["maxTokens"] = 64
        run = ws.submit((graph, plan), {"value": 1})
        finish(run)
    assert outcome(run) == {"status": "error", "code": "malformed", "reason": "malformed_result"}
    requests = [r["body"] for r in server.completions()]
    assert len(requests) == 3  # the reply and two corrections
    corrections = [body["messages"][-1]["content"] for body in requests[1:]]
    for correction in corrections:
        assert "cut at the token limit, max_tokens (64 tokens)" in correction
        assert "shorter reply" in correction
    [completed] = completions(run)
    assert completed.detail is not None and "cut at the token limit" in completed.detail
    assert any("reply 1 rejected: the reply was cut" in log.line for _, log in run.logs())


def test_a_cut_reply_corrected_in_time_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "local-key-1234")
    ws = make_workspace(tmp_path)
    with chat_server(
        {"content": '{"val', "finish_reason": "length"}, {"reply": "increment"}
    ) as server:
        run = ws.submit(with_connection(one_step("openai"), server.base_url), {"value": 1})
        assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 2}}
    _, second = server.completions()
    messages = second["body"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert "max_tokens (4096 tokens)" in messages[3]["content"]


def test_the_openai_key_is_sent_but_never_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection the templates declare: ``openai`` reading ``OPENAI_API_KEY``."""
    secret = f"sk-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    ws = make_workspace(tmp_path)
    with chat_server({"content": f"my key is {secret}"}, {"reply": "increment"}) as server:
        graph, plan = one_step("openai", connections=["openai"])
        plan["connections"] = {"openai": {"env": "OPENAI_API_KEY", "baseUrl": server.base_url}}
        run = ws.submit((graph, plan), {"value": 1})
        assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 2}}
    assert all(r["headers"]["Authorization"] == f"Bearer {secret}" for r in server.completions())
    lines = [log.line for _, log in run.logs()]
    assert any("<redacted>" in line for line in lines)
    assert all(secret not in line for line in lines)
    assert secret.encode() not in ledger_bytes(ws)
    assert secret not in controller_logs(ws)


def test_a_malformed_reply_is_corrected_in_the_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "local-key-1234")
    ws = make_workspace(tmp_path)
    with chat_server({"content": '{"value": 1.5}'}, {"reply": "increment"}) as server:
        run = ws.submit(with_connection(one_step("openai"), server.base_url), {"value": 1})
        assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 2}}
    _, second = server.completions()
    messages = second["body"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == '{"value": 1.5}'
    assert "output.value: expected an integer without a fraction" in messages[3]["content"]
    [completed] = completions(run)
    assert completed.usage is not None and completed.usage.input_tokens == 22


def test_three_malformed_replies_are_malformed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "local-key-1234")
    ws = make_workspace(tmp_path)
    with chat_server({"content": "not json at all"}) as server:
        run = ws.submit(with_connection(one_step("openai"), server.base_url), {"value": 1})
        finish(run)
    assert outcome(run) == {"status": "error", "code": "malformed", "reason": "malformed_result"}
    assert len(server.completions()) == 3


def test_a_model_refusal_is_a_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "local-key-1234")
    ws = make_workspace(tmp_path)
    with chat_server({"refusal": "I can't help with that."}) as server:
        run = ws.submit(with_connection(one_step("openai"), server.base_url), {"value": 1})
        finish(run)
    assert outcome(run) == {"status": "error", "code": "refusal", "reason": "policy_denied"}


def test_node_instance_continues_the_conversation_and_execution_never_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "local-key-1234")
    ws = make_workspace(tmp_path)
    with chat_server({"reply": "increment"}) as server:
        graph, plan = with_connection(
            refine_loop("openai", "node_instance", "execution"), server.base_url
        )
        plan["nodes"]["gate"]["model"] = "gate-model"
        run = ws.submit((graph, plan), {"value": 0})
        assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 3}}
    bumps = [r["body"] for r in server.completions() if r["body"]["model"] == "gpt-test-mini"]
    gates = [r["body"] for r in server.completions() if r["body"]["model"] == "gate-model"]
    assert len(bumps) == len(gates) == 3
    # every gate request starts a fresh conversation
    assert all(len(body["messages"]) == 2 for body in gates)
    # each bump request continues the previous bump conversation
    assert [len(body["messages"]) for body in bumps] == [2, 4, 6]
    assert bumps[2]["messages"][:4] == bumps[1]["messages"]


def test_a_connection_secret_is_sent_but_never_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"sk-{uuid.uuid4().hex}"
    monkeypatch.setenv(KEY_ENV, secret)
    ws = make_workspace(tmp_path)
    # The model echoes the key in a malformed reply: it is logged (redacted) as a problem.
    with chat_server({"content": f"my key is {secret}"}, {"reply": "increment"}) as server:
        run = ws.submit(with_connection(one_step("openai"), server.base_url), {"value": 1})
        assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 2}}
    assert server.completions()[0]["headers"]["Authorization"] == f"Bearer {secret}"
    lines = [log.line for _, log in run.logs()]
    assert any("<redacted>" in line for line in lines)
    assert all(secret not in line for line in lines)
    assert secret.encode() not in ledger_bytes(ws)
    assert secret not in controller_logs(ws)


def test_without_a_model_the_servers_only_model_is_used_else_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local server with one model loaded needs no --model; with several, the node is
    refused with the models the server offers, and no completion is requested."""
    no_env(monkeypatch, KEY_ENV)
    ws = make_workspace(tmp_path)
    with chat_server({"reply": "increment"}) as server:
        graph, plan = with_connection(one_step("openai"), server.base_url)
        del plan["model"]
        assert wire(finish(ws.submit((graph, plan), {"value": 1}))) == {
            "status": "succeeded",
            "output": {"value": 2},
        }
        [request] = server.completions()
        assert request["body"]["model"] == "standin"
        server.models = ["llama-3-8b", "qwen-2-7b"]
        refused = ws.submit((graph, plan), {"value": 1})
        finish(refused)
        [completed] = completions(refused)
        assert completed.completion.outcome.to_wire()["code"] == "refusal"
        assert completed.detail is not None and "llama-3-8b, qwen-2-7b" in completed.detail
        assert "--model" in completed.detail
    assert len(server.completions()) == 1
