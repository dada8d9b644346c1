"""The prompt contract: response schemas from declared types, reply parsing and checking,
correction turns, and the conversation driver every LLM harness shares."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import engine_graphs as g
import pytest

from zeroshot_kernel.contract.graph import StepNode, VerifierNode
from zeroshot_kernel.harness.base import ExecutionRequest
from zeroshot_kernel.harness.conversation import Turn, add_usage, converse
from zeroshot_kernel.harness.plan import AgentBinding, RuntimePlan
from zeroshot_kernel.harness.prompt import (
    Accepted,
    Declined,
    Rejected,
    correction_prompt,
    extract_json,
    is_strict_schema,
    parse_reply,
    render_prompt,
    response_schema,
)
from zeroshot_kernel.harness.sessions import SessionPool, occurrence_key
from zeroshot_kernel.ledger.events import Usage

OUTPUT = g.rec(
    title=g.STR, score=g.field({"kind": "number"}), tags=g.arr(g.enum("a", "b")), note=g.opt(g.STR)
)


def step_node(output: dict[str, Any] = OUTPUT) -> StepNode:
    node = g.step("write", input=g.VALUE, output=output, reads={"value": g.state("value")})
    node["instructions"] = "Write a title for the value."
    return StepNode.from_wire(node)


def verifier_node() -> VerifierNode:
    node = g.verifier(
        "review",
        input=g.VALUE,
        reads={"value": g.state("value")},
        signals={"verdict": ["accepted", "rejected"], "risk": ["high", "low"]},
        diagnostic=g.rec(reason=g.STR),
    )
    node["instructions"] = "Review the value."
    return VerifierNode.from_wire(node)


def test_the_response_schema_mirrors_the_declared_output_type() -> None:
    assert response_schema(step_node()) == {
        "type": "object",
        "properties": {
            "note": {"type": "string"},
            "score": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            "title": {"type": "string"},
        },
        "required": ["title", "score", "tags"],
        "additionalProperties": False,
    }
    assert response_schema(step_node(g.NULL)) == {"type": "null"}


def test_a_verifier_schema_has_output_signals_with_labels_and_diagnostic() -> None:
    schema = response_schema(verifier_node())
    assert schema["required"] == ["output", "signals", "diagnostic"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["output"] == {"type": "null"}
    assert schema["properties"]["signals"] == {
        "type": "object",
        "properties": {
            "risk": {"type": "string", "enum": ["high", "low"]},
            "verdict": {"type": "string", "enum": ["accepted", "rejected"]},
        },
        "required": ["risk", "verdict"],
        "additionalProperties": False,
    }
    assert schema["properties"]["diagnostic"]["required"] == ["reason"]


def test_strictness_needs_every_field_required() -> None:
    assert not is_strict_schema(response_schema(step_node()))
    assert is_strict_schema(response_schema(step_node(g.rec(a=g.INT, b=g.arr(g.rec(c=g.STR))))))
    assert is_strict_schema(response_schema(verifier_node()))


def test_the_prompt_has_instructions_input_and_contract() -> None:
    prompt = render_prompt(verifier_node(), {"value": 3})
    assert prompt.startswith("# Task (verifier `review`)\n\nReview the value.\n")
    assert '# Input (JSON)\n\n{\n  "value": 3\n}\n' in prompt
    assert "`risk` is one of high, low; `verdict` is one of accepted, rejected" in prompt
    assert '{"refusal":' in prompt
    schema_text = prompt.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(schema_text) == response_schema(verifier_node())


@pytest.mark.parametrize(
    "text",
    [
        '{"title": "t", "score": 1, "tags": ["a"]}',
        'Here it is:\n```json\n{"title": "t", "score": 1, "tags": ["a"]}\n```\n',
        'Done. {"title": "t", "score": 1, "tags": ["a"]} Hope that helps!',
    ],
)
def test_a_fitting_reply_is_accepted_wherever_the_json_sits(text: str) -> None:
    parsed = parse_reply(step_node(), text)
    assert isinstance(parsed, Accepted)
    assert parsed.outcome.to_wire() == {
        "status": "verified",
        "output": {"title": "t", "score": 1, "tags": ["a"]},
        "artifacts": [],
    }


def test_problems_name_the_path_and_what_was_wrong() -> None:
    parsed = parse_reply(step_node(), '{"title": 3, "tags": ["c"], "extra": 1}')
    assert isinstance(parsed, Rejected)
    assert parsed.problems == [
        "output.title: expected a string, got the number 3",
        "output.score: required field is missing",
        "output.tags[0]: expected one of a, b, got the string 'c'",
        "output.extra: unknown field",
    ]
    not_json = parse_reply(step_node(), "I think the title should be Foo.")
    assert isinstance(not_json, Rejected)
    assert not_json.problems[0].startswith("the reply is not JSON")
    whole = parse_reply(step_node(g.INT), '"seven"')
    assert isinstance(whole, Rejected)
    assert whole.problems == ["output: expected an integer, got the string 'seven'"]


def test_a_verifier_reply_is_checked_signal_by_signal() -> None:
    node = verifier_node()
    good = {
        "output": None,
        "signals": {"verdict": "accepted", "risk": "low"},
        "diagnostic": {"reason": "fine"},
    }
    parsed = parse_reply(node, json.dumps(good))
    assert isinstance(parsed, Accepted)
    assert parsed.outcome.to_wire()["signals"] == {"verdict": "accepted", "risk": "low"}
    bad = {
        "output": 1,
        "signals": {"verdict": "maybe", "mood": "x"},
        "diagnostic": {},
        "extra": True,
    }
    rejected = parse_reply(node, json.dumps(bad))
    assert isinstance(rejected, Rejected)
    assert rejected.problems == [
        "unknown field 'extra'",
        "output: expected null, got the number 1",
        "diagnostic.reason: required field is missing",
        "signals.risk: missing (one of high, low)",
        "signals.verdict: 'maybe' is not one of accepted, rejected",
        "signals.mood: not a declared signal",
    ]


def test_a_refusal_object_declines_unless_the_type_accepts_it() -> None:
    declined = parse_reply(step_node(), '{"refusal": "unsafe"}')
    assert declined == Declined("unsafe")
    assert parse_reply(verifier_node(), '{"refusal": "no"}') == Declined("no")
    accepting = step_node(g.rec(refusal=g.STR))
    assert isinstance(parse_reply(accepting, '{"refusal": "a field"}'), Accepted)


def test_extract_json_and_correction_text() -> None:
    assert extract_json("  [1, 2] ") == ([1, 2],)
    assert extract_json("no json here") is None
    text = correction_prompt([f"problem {i}" for i in range(10)])
    assert text.startswith("Your last reply was not accepted:\n- problem 0\n")
    assert "- ... and 2 more" in text
    assert "only the corrected JSON value" in text


def request_for(
    node: StepNode | VerifierNode, scope: str = "execution", instance: str = "write#1"
) -> ExecutionRequest:
    binding = AgentBinding(session_scope=scope)  # type: ignore[arg-type]
    plan = RuntimePlan(harness="openai", model="m", nodes={node.name: binding})
    return ExecutionRequest(
        run_id="run-x",
        node=node,
        execution="e1",
        node_instance=instance,
        attempt=1,
        input={"value": 1},
        binding=binding,
        plan=plan,
        workspace=Path("."),
    )


class FakeAgent:
    """Answers each turn with the next scripted text, counting sessions."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.prompts: list[tuple[str, str | None]] = []

    async def send(self, prompt: str, session: str | None) -> Turn[str]:
        self.prompts.append((prompt, session))
        return Turn(
            text=self.replies.pop(0),
            usage=Usage(input_tokens=10, output_tokens=2),
            session=session or "s-1",
        )


def test_two_corrections_then_malformed() -> None:
    agent = FakeAgent("nope", "still nope", '{"title": 1}', '{"never": "asked"}')
    conversation = asyncio.run(converse(request_for(step_node()), agent.send))
    assert conversation.result.outcome.to_wire() == {
        "status": "error",
        "code": "malformed",
        "reason": "malformed_result",
    }
    assert conversation.session is None
    assert len(agent.prompts) == 3
    assert [session for _, session in agent.prompts] == [None, "s-1", "s-1"]
    assert agent.prompts[1][0].startswith("Your last reply was not accepted")
    assert conversation.result.usage == Usage(input_tokens=30, output_tokens=6)


def test_a_correction_without_a_session_repeats_the_contract() -> None:
    class Sessionless(FakeAgent):
        async def send(self, prompt: str, session: str | None) -> Turn[str]:
            self.prompts.append((prompt, session))
            return Turn(text=self.replies.pop(0))

    agent = Sessionless("nope", '{"title": "t", "score": 1, "tags": []}')
    conversation = asyncio.run(converse(request_for(step_node()), agent.send))
    assert conversation.result.outcome.to_wire()["status"] == "verified"
    second = agent.prompts[1][0]
    assert second.startswith("# Task (step `write`)")
    assert "Your last reply was not accepted" in second


def test_usage_sums_what_is_reported() -> None:
    assert add_usage(None, None) is None
    assert add_usage(Usage(cost_usd=0.5), Usage(input_tokens=3, cost_usd=0.25)) == Usage(
        input_tokens=3, cost_usd=0.75
    )


def test_sessions_are_kept_per_occurrence_for_node_instance_scope_only() -> None:
    assert occurrence_key("review[0][2]#3") == "review[0][2]"
    pool: SessionPool[str] = SessionPool()
    first = request_for(step_node(), "node_instance", "write#1")
    revisit = request_for(step_node(), "node_instance", "write#2")
    pool.keep(first, "s-1")
    assert pool.take(revisit) == "s-1"
    assert pool.take(revisit) is None  # taken while the execution runs
    fresh = request_for(step_node(), "execution", "write#1")
    pool.keep(fresh, "s-2")
    assert pool.take(fresh) is None
