"""What auto-research adds to the core (one of :mod:`zeroshot_kernel.builtins`).

Each loader imports its module when first called: the agents load numpy, the template the
graph builders, and a run on another harness needs neither.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from zeroshot_kernel.features import EmbeddedCode, Feature

if TYPE_CHECKING:
    import typer

    from zeroshot_kernel.client import Client
    from zeroshot_kernel.delivery.harness import Delivery
    from zeroshot_kernel.harness.base import ExecutionRequest
    from zeroshot_kernel.harness.roles import Role
    from zeroshot_kernel.templates import Template

_AGENTS = "zeroshot_kernel.auto_research.local_agents"
_TRUSTED = "zeroshot_kernel.auto_research.trusted_nodes"
_STRATEGIES = ("exploration", "synthesis", "challenge")


def _template() -> Template:
    from zeroshot_kernel.auto_research.template import TEMPLATE

    return TEMPLATE


def _agent_context(request: ExecutionRequest) -> dict[str, Any]:
    from zeroshot_kernel.auto_research.local_agents import engine_context

    return engine_context(request)


def _trusted_context(request: ExecutionRequest) -> dict[str, Any]:
    from zeroshot_kernel.auto_research.trusted_nodes import engine_context

    return engine_context(request)


def _release(run_id: str) -> None:
    from zeroshot_kernel.auto_research.engine_context import release_run

    release_run(run_id)


def _scout() -> Role:
    from zeroshot_kernel.auto_research.llm_roles import SCOUT

    return SCOUT


def _researcher() -> Role:
    from zeroshot_kernel.auto_research.llm_roles import RESEARCHER

    return RESEARCHER


def _reviewer() -> Role:
    from zeroshot_kernel.auto_research.llm_roles import REVIEWER

    return REVIEWER


def _publish() -> Delivery:
    from zeroshot_kernel.auto_research.publish import deliver_node

    return deliver_node


def _commands() -> typer.Typer:
    from zeroshot_kernel.auto_research.commands import research_app

    return research_app


def _claimed(client: Client, run_input: Any) -> AbstractContextManager[None]:
    from zeroshot_kernel.auto_research.studies.catalog import claimed

    return claimed(client, run_input)


def _agent(function: str) -> EmbeddedCode:
    return EmbeddedCode(f"{_AGENTS}:{function}", _agent_context, release=_release)


def _trusted(function: str, worker: str) -> EmbeddedCode:
    return EmbeddedCode(f"{_TRUSTED}:{function}", _trusted_context, worker, _release)


FEATURE = Feature(
    name="auto_research",
    templates={"auto-research": _template},
    embedded_agents={
        **{f"research.scout.{s}": _agent(f"scout_{s}") for s in _STRATEGIES},
        "research.researcher": _agent("researcher"),
        "research.reviewer": _agent("reviewer"),
    },
    trusted_code={
        "research.measure": _trusted("measure", "zeroshot.research.measure@1"),
        "research.adopt": _trusted("adopt", "zeroshot.research.adopt@1"),
    },
    roles={
        **{f"zeroshot.research.scout-{s}@1": _scout for s in _STRATEGIES},
        "zeroshot.research.researcher@1": _researcher,
        "zeroshot.research.reviewer@1": _reviewer,
    },
    deliveries={"zeroshot.git-delivery.push@1": _publish},
    commands={"research": _commands},
    submit_guards=(_claimed,),
)
