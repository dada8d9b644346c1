"""The prompt contract between the engine and an LLM agent.

A prompt is the node's instructions, its input as JSON and a response contract: a JSON
Schema generated from the node's declared output type (for a verifier: the output, one
label per declared signal, and the diagnostic). A reply is parsed and checked against the
declared types here, before the controller ever sees it; a reply that does not fit earns
a correction turn that says what was wrong, at most :data:`MAX_CORRECTIONS` times.

An agent that must not do the task may decline with ``{"refusal": "why"}``; that is
recorded as ``refusal`` (unless the declared output type itself accepts that value).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from zeroshot_kernel.contract.graph import StepNode, VerifierNode
from zeroshot_kernel.contract.outcome import VerifiedOutcome, VerifierOutcome, WorkerOutcome
from zeroshot_kernel.contract.payload import (
    ArrayType,
    BooleanType,
    EnumType,
    IntegerType,
    NullType,
    NumberType,
    PayloadType,
    RecordType,
    StringType,
    ValueViolation,
    check_value,
)

MAX_CORRECTIONS = 2
"""Correction turns after the first reply; a reply still wrong after them is malformed."""
_MAX_PROBLEMS_SHOWN = 8
_FENCED = re.compile(r"```(?:json)?\s*\n(.*?)\n\s*```", re.DOTALL)

ExecutableNode = StepNode | VerifierNode


def payload_schema(payload: PayloadType) -> dict[str, Any]:
    """The JSON Schema accepting exactly the values of ``payload`` (as JSON data)."""
    match payload:
        case NullType():
            return {"type": "null"}
        case BooleanType():
            return {"type": "boolean"}
        case IntegerType():
            return {"type": "integer"}
        case NumberType():
            return {"type": "number"}
        case StringType():
            return {"type": "string"}
        case EnumType():
            return {"type": "string", "enum": list(payload.values)}
        case ArrayType():
            return {"type": "array", "items": payload_schema(payload.items)}
        case RecordType():
            return {
                "type": "object",
                "properties": {
                    name: payload_schema(field.type) for name, field in payload.fields.items()
                },
                "required": [name for name, field in payload.fields.items() if field.required],
                "additionalProperties": False,
            }
    raise TypeError(f"unknown payload type {payload!r}")  # pragma: no cover


def response_schema(node: ExecutableNode) -> dict[str, Any]:
    """What the node's final reply must be: its output value, or for a verifier
    ``{output, signals, diagnostic}`` with every declared signal and only its labels."""
    if isinstance(node, StepNode):
        return payload_schema(node.output)
    signals = {
        name: {"type": "string", "enum": sorted(labels)} for name, labels in node.signals.items()
    }
    return {
        "type": "object",
        "properties": {
            "output": payload_schema(node.output),
            "signals": {
                "type": "object",
                "properties": signals,
                "required": sorted(signals),
                "additionalProperties": False,
            },
            "diagnostic": payload_schema(node.diagnostic),
        },
        "required": ["output", "signals", "diagnostic"],
        "additionalProperties": False,
    }


def is_strict_schema(schema: Any) -> bool:
    """Whether every object in ``schema`` requires all its properties (what strict
    structured-output modes accept); optional fields make a schema non-strict."""
    if isinstance(schema, dict):
        properties = schema.get("properties", {})
        if schema.get("type") == "object" and set(schema.get("required", ())) != set(properties):
            return False
        return all(is_strict_schema(value) for value in schema.values())
    if isinstance(schema, list):
        return all(is_strict_schema(item) for item in schema)
    return True


def render_prompt(node: ExecutableNode, value: Any, brief: str = "") -> str:
    """The first prompt of an execution: instructions, input, the engine's context for
    the node's role (``brief``, when there is one), response contract."""
    role = "verifier" if isinstance(node, VerifierNode) else "step"
    parts = [
        f"# Task ({role} `{node.name}`)",
        node.instructions or "Do the work this node describes.",
        "# Input (JSON)",
        json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True),
        *(["# Context from the engine (trusted records)", brief.strip()] if brief.strip() else []),
        "# Response contract",
        _contract_text(node),
        "```json",
        json.dumps(response_schema(node), indent=2, sort_keys=True),
        "```",
    ]
    return "\n\n".join(parts) + "\n"


def _contract_text(node: ExecutableNode) -> str:
    rules = [
        "When you are done, your final message must be exactly one JSON value that "
        "matches the JSON Schema below: no prose around it, no comments, no extra fields.",
    ]
    if isinstance(node, VerifierNode):
        described = "; ".join(
            f"`{name}` is one of {', '.join(sorted(labels))}"
            for name, labels in sorted(node.signals.items())
        )
        rules.append(
            'As a verifier you answer with an object {"output", "signals", '
            '"diagnostic"}: `output` is your checked result, `signals` gives exactly one '
            f"label for every signal ({described}), `diagnostic` explains your judgement."
        )
    rules.append(
        'If you must decline the task, reply with exactly {"refusal": "<why, in one '
        'sentence>"} instead.'
    )
    return "\n".join(f"- {rule}" for rule in rules)


def correction_prompt(problems: list[str]) -> str:
    """A correction turn: what was wrong with the last reply, and what to send instead."""
    shown = problems[:_MAX_PROBLEMS_SHOWN]
    more = len(problems) - len(shown)
    listed = "\n".join(f"- {problem}" for problem in shown)
    if more > 0:
        listed += f"\n- ... and {more} more"
    return (
        "Your last reply was not accepted:\n"
        f"{listed}\n\n"
        "Reply again with only the corrected JSON value that matches the response "
        "contract you were given, and nothing else.\n"
    )


@dataclass(frozen=True)
class Accepted:
    """The reply fits: the outcome to record."""

    outcome: WorkerOutcome


@dataclass(frozen=True)
class Declined:
    """The agent declined the task (``{"refusal": ...}``)."""

    reason: str


@dataclass(frozen=True)
class Rejected:
    """The reply does not fit; ``problems`` are said back to the agent."""

    problems: list[str]


Parsed = Accepted | Declined | Rejected


def parse_reply(node: ExecutableNode, text: str) -> Parsed:
    """Parse the agent's final message and check it against the node's declared types."""
    found = extract_json(text)
    if found is None:
        snippet = " ".join(text.split())[:80]
        return Rejected([f"the reply is not JSON (it starts with {snippet!r})"])
    value = found[0]
    if isinstance(node, StepNode):
        violations = check_value(value, node.output)
        if not violations:
            return Accepted(VerifiedOutcome(status="verified", output=value))
        if (declined := _declined(value)) is not None:
            return declined
        return Rejected([_problem("output", v) for v in violations])
    problems = _verifier_problems(node, value)
    if not problems:
        return Accepted(
            VerifierOutcome(
                status="verifier",
                output=value["output"],
                signals=value["signals"],
                diagnostic=value["diagnostic"],
            )
        )
    if (declined := _declined(value)) is not None:
        return declined
    return Rejected(problems)


def _declined(value: Any) -> Declined | None:
    if isinstance(value, dict) and set(value) == {"refusal"} and isinstance(value["refusal"], str):
        return Declined(value["refusal"])
    return None


def _verifier_problems(node: VerifierNode, value: Any) -> list[str]:
    if not isinstance(value, dict):
        return ["a verifier replies with an object {output, signals, diagnostic}"]
    problems = [
        f"unknown field {key!r}"
        for key in sorted(value)
        if key not in ("output", "signals", "diagnostic")
    ]
    problems += [
        f"missing field {key!r}" for key in ("output", "signals", "diagnostic") if key not in value
    ]
    if "output" in value:
        problems += [_problem("output", v) for v in check_value(value["output"], node.output)]
    if "diagnostic" in value:
        problems += [
            _problem("diagnostic", v) for v in check_value(value["diagnostic"], node.diagnostic)
        ]
    signals = value.get("signals")
    if "signals" in value and not isinstance(signals, dict):
        problems.append("signals must be an object with one label per signal")
    elif isinstance(signals, dict):
        for name, labels in sorted(node.signals.items()):
            if name not in signals:
                problems.append(f"signals.{name}: missing (one of {', '.join(sorted(labels))})")
            elif signals[name] not in labels:
                problems.append(
                    f"signals.{name}: {signals[name]!r} is not one of {', '.join(sorted(labels))}"
                )
        problems += [
            f"signals.{name}: not a declared signal"
            for name in sorted(signals)
            if name not in node.signals
        ]
    return problems


def _problem(prefix: str, violation: ValueViolation) -> str:
    where = violation.describe()
    if where.startswith("(value): "):
        return f"{prefix}: {where.removeprefix('(value): ')}"
    return f"{prefix}{'' if where.startswith('[') else '.'}{where}"


def extract_json(text: str) -> tuple[Any] | None:
    """The JSON value in a reply: the whole text, else the last fenced block, else the
    span from the first ``{``/``[`` to the last ``}``/``]``. ``(value,)`` or None."""
    candidates = [text.strip()]
    candidates += [block.strip() for block in reversed(_FENCED.findall(text))]
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    end = max(text.rfind("}"), text.rfind("]"))
    if starts and end > min(starts):
        candidates.append(text[min(starts) : end + 1])
    for candidate in candidates:
        try:
            return (json.loads(candidate),)
        except ValueError:
            continue
    return None
