"""One execution as a conversation: the prompt, then up to two correction turns.

Harnesses differ only in how one turn is sent (a CLI invocation, an HTTP request) and
what a session is (a CLI session id, a list of chat messages); this module owns the
rest: the prompt contract, correction turns, the ``malformed`` verdict, summed usage,
and which turns leave a session fit to be continued.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from zeroshot_kernel.contract.outcome import ErrorOutcome, error
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult
from zeroshot_kernel.harness.prompt import (
    MAX_CORRECTIONS,
    Accepted,
    Declined,
    correction_prompt,
    parse_reply,
    render_prompt,
)
from zeroshot_kernel.ledger.events import Usage

S = TypeVar("S")


@dataclass(frozen=True)
class Turn(Generic[S]):
    """What one turn produced: the agent's final message (``text``), or ``failure``,
    which ends the execution (a crash, a refusal, missing credentials). ``defect`` says
    why ``text`` cannot be accepted whatever it holds (e.g. the reply was cut at the
    token limit): the turn is corrected like a reply that breaks the contract."""

    text: str | None = None
    failure: HarnessResult | None = None
    usage: Usage | None = None
    session: S | None = None
    defect: str | None = None


SendTurn = Callable[[str, "S | None"], Awaitable[Turn[S]]]
"""``send(prompt, session)``: one turn, continuing ``session`` when it is not None."""


@dataclass(frozen=True)
class Conversation(Generic[S]):
    result: HarnessResult
    session: S | None
    """The session to continue next time, or None when the last turn was unclean."""


async def converse(
    request: ExecutionRequest, send: SendTurn[S], session: S | None = None
) -> Conversation[S]:
    """Run one execution: prompt, check, correct, and settle on an outcome."""
    prompt = render_prompt(request.node, request.input, request.brief)
    usage: Usage | None = None
    for turn_number in range(MAX_CORRECTIONS + 1):
        turn = await send(prompt, session)
        usage = add_usage(usage, turn.usage)
        session = turn.session if turn.session is not None else session
        if turn.failure is not None:
            return Conversation(_with_usage(turn.failure, usage), None)
        if turn.defect is not None:
            problems = [turn.defect]
        else:
            parsed = parse_reply(request.node, turn.text or "")
            if isinstance(parsed, Accepted):
                return Conversation(HarnessResult(parsed.outcome, None, usage), session)
            if isinstance(parsed, Declined):
                detail = f"the agent declined: {parsed.reason}"[:1000]
                return Conversation(
                    HarnessResult(error("refusal", "policy_denied"), detail, usage), None
                )
            problems = parsed.problems
        request.log("system", f"reply {turn_number + 1} rejected: {'; '.join(problems)}"[:2000])
        if turn_number == MAX_CORRECTIONS:
            detail = (
                f"no reply fit the response contract after {MAX_CORRECTIONS} "
                f"corrections: {'; '.join(problems)}"
            )[:1000]
            return Conversation(
                HarnessResult(error("malformed", "malformed_result"), detail, usage), None
            )
        correction = correction_prompt(problems)
        # Without a session to continue, the agent needs the whole contract again.
        if session is None:
            first = render_prompt(request.node, request.input, request.brief)
            correction = f"{first}\n{correction}"
        prompt = correction
    raise AssertionError("unreachable")  # pragma: no cover


def add_usage(total: Usage | None, more: Usage | None) -> Usage | None:
    """Usage summed over turns; a field stays None until some turn reports it."""
    if more is None:
        return total
    if total is None:
        return more

    def plus(a: float | None, b: float | None) -> float | None:
        return b if a is None else a if b is None else a + b

    def plus_int(a: int | None, b: int | None) -> int | None:
        return b if a is None else a if b is None else a + b

    return Usage(
        input_tokens=plus_int(total.input_tokens, more.input_tokens),
        output_tokens=plus_int(total.output_tokens, more.output_tokens),
        cost_usd=plus(total.cost_usd, more.cost_usd),
    )


def _with_usage(result: HarnessResult, usage: Usage | None) -> HarnessResult:
    return HarnessResult(result.outcome, result.detail, usage)


def is_clean(result: HarnessResult) -> bool:
    return not isinstance(result.outcome, ErrorOutcome)
