"""Built-in templates. Each expands to an ordinary graph, its run input and a runtime
plan: exactly what a user could write by hand, and print with ``zeroshot template show``.

>>> sorted(template_names())
['auto-research', 'single-worker', 'software-change']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from zeroshot_kernel.contract.documents import node_documents
from zeroshot_kernel.templates.auto_research import (
    DEFAULT_ITERATIONS,
    STRATEGIES,
    auto_research_graph,
    auto_research_input,
)
from zeroshot_kernel.templates.single_worker import single_worker_graph
from zeroshot_kernel.templates.software_change import (
    AGENT_NODES,
    DEFAULT_DELIVERY,
    TRUSTED_NODES,
    placeholder_delivery,
    software_change_graph,
    software_change_input,
)


@dataclass(frozen=True)
class TemplateOptions:
    """What a user may choose when expanding a template."""

    task: str = ""
    iterations: int | None = None
    study: str | None = None
    """auto-research: the study whose records the run continues (default: the task
    folder's name)."""
    push: bool = False
    harness: str = "local"
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    """openai harness: the OpenAI-compatible server (e.g. ``http://127.0.0.1:8080/v1``);
    ignored by the other harnesses. Without it the ``openai`` connection's default
    (``OPENAI_BASE_URL``, else the hosted API) is used."""
    max_tokens: int | None = None
    """openai harness: the token budget of each reply (``maxTokens``; default 4096)."""
    delivery: str = DEFAULT_DELIVERY
    """software-change: none, push, pr or ship."""
    profile: str = "standard"
    """software-change: micro, standard or high-risk (``auto`` is resolved before)."""
    checks: tuple[str, ...] = ()
    """software-change: commands whose receipts are the run's evidence."""
    prepared: dict[str, Any] | None = None
    """software-change: the prepared delivery (remote, target branch, base); a
    placeholder when not given."""
    classification: dict[str, Any] | None = None
    """software-change: the classification that chose ``profile`` under ``auto``."""


@dataclass(frozen=True)
class Expansion:
    """A template expanded: submit ``graph`` with ``input`` and ``runtime``."""

    graph: dict[str, Any]
    input: dict[str, Any]
    runtime: dict[str, Any]


@dataclass(frozen=True)
class Template:
    name: str
    summary: str
    expand: Callable[[TemplateOptions], Expansion]


OPENAI_CONNECTION = "openai"
OPENAI_KEY_ENV = "OPENAI_API_KEY"
"""The openai harness's connection: its key (optional: a local server needs none) is
passed to the agents, redacted, only when set."""


def _agent(options: TemplateOptions, *, scope: str = "execution", agent: str | None = None
           ) -> dict[str, Any]:
    binding: dict[str, Any] = {"kind": "agent", "sessionScope": scope}
    if options.harness == "local" and agent is not None:
        binding["agent"] = agent
    if options.harness == "openai":
        binding["connections"] = [OPENAI_CONNECTION]
    return binding


def _plan(options: TemplateOptions, nodes: dict[str, Any]) -> dict[str, Any]:
    plan: dict[str, Any] = {"harness": options.harness, "nodes": nodes}
    if options.provider:
        plan["provider"] = options.provider
    if options.model:
        plan["model"] = options.model
    if options.max_tokens is not None:
        plan["maxTokens"] = options.max_tokens
    if options.harness == "openai":
        connection: dict[str, Any] = {"env": OPENAI_KEY_ENV}
        if options.base_url:
            connection["baseUrl"] = checked_base_url(options.base_url)
        plan["connections"] = {OPENAI_CONNECTION: connection}
    return plan


def checked_base_url(url: str) -> str:
    """An OpenAI-compatible server's base URL, or ``ValueError`` saying what is wrong.

    >>> checked_base_url("http://127.0.0.1:8080/v1/")
    'http://127.0.0.1:8080/v1'
    """
    from urllib.parse import urlsplit

    stripped = url.strip().rstrip("/")
    parts = urlsplit(stripped)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"base URL {url!r} is not an http(s) URL such as "
                         "http://127.0.0.1:8080/v1")
    return stripped


def _single_worker(options: TemplateOptions) -> Expansion:
    return Expansion(
        graph=single_worker_graph(),
        input={"task": options.task},
        runtime=_plan(options, {"worker": _agent(options, scope="node_instance")}),
    )


def _auto_research(options: TemplateOptions) -> Expansion:
    # ``None`` means the default; any given count (0 included) is checked by the graph.
    iterations = DEFAULT_ITERATIONS if options.iterations is None else options.iterations
    nodes: dict[str, Any] = {
        f"scout_{s}": _agent(options, scope="node_instance", agent=f"research.scout.{s}")
        for s in STRATEGIES
    }
    nodes["researcher"] = _agent(options, scope="node_instance", agent="research.researcher")
    nodes["reviewer"] = _agent(options, agent="research.reviewer")
    # Trusted engine code whatever the harness: a model never measures or adopts.
    nodes["measure"] = {"kind": "trusted", "code": "research.measure"}
    nodes["adopt"] = {"kind": "trusted", "code": "research.adopt"}
    if options.push:
        nodes["deliver"] = {"kind": "git_delivery"}
    return Expansion(
        graph=auto_research_graph(iterations, push=options.push),
        input=auto_research_input(options.task, options.iterations, options.study),
        runtime=_plan(options, nodes),
    )


SOFTWARE_CHANGE_MODEL = "claude-sonnet-5"
"""The coding agents' model on the claude harness unless ``--model`` says otherwise."""


def _software_change(options: TemplateOptions) -> Expansion:
    if options.harness == "local":  # no embedded software agents: the coding agent is claude
        options = replace(options, harness="claude")
    graph = software_change_graph(options.delivery, options.profile)
    present = _executables(graph["root"])
    nodes: dict[str, Any] = {name: _agent(options, scope="node_instance")
                             for name in AGENT_NODES if name in present}
    nodes |= {name: {"kind": "agent", "harness": "python", "callable": trusted}
              for name, trusted in TRUSTED_NODES.items() if name in present}
    if options.delivery != "none":
        nodes["deliver"] = {"kind": "git_delivery"}
        if options.delivery in ("pr", "ship"):
            nodes["deliver"]["connections"] = ["github"]
    delivery = None if options.delivery == "none" else \
        (options.prepared or placeholder_delivery(options.delivery))
    runtime = _plan(options, nodes)
    if options.harness == "claude" and not options.model:
        runtime["model"] = SOFTWARE_CHANGE_MODEL
    return Expansion(
        graph=graph,
        input=software_change_input(options.task, profile=options.profile,
                                    checks=list(options.checks), delivery=delivery,
                                    classification=options.classification),
        runtime=runtime,
    )


def _executables(node: dict[str, Any]) -> set[str]:
    return {n["name"] for n in node_documents(node) if n["kind"] in ("step", "verifier")}


TEMPLATES: dict[str, Template] = {
    "single-worker": Template(
        "single-worker", "One agent completes a task; an error fails the run.", _single_worker
    ),
    "auto-research": Template(
        "auto-research",
        "Reviewed rounds of three read-only scouts, one researcher proposing a change, "
        "trusted measurement, a fresh reviewer and trusted adoption, improving a candidate "
        "against a measured metric.",
        _auto_research,
    ),
    "software-change": Template(
        "software-change",
        "One owner changes code in its own worktree; reviewers under the review "
        "discipline; trusted delivery (none, push, pull request, ship).",
        _software_change,
    ),
}


def template_names() -> list[str]:
    return list(TEMPLATES)


def expand_template(name: str, options: TemplateOptions | None = None) -> Expansion:
    """Expand a built-in template; ``KeyError`` names the known ones, ``ValueError`` says
    why an option is out of range (``iterations`` outside 1..100)."""
    if name not in TEMPLATES:
        raise KeyError(f"unknown template {name!r}; known: {', '.join(TEMPLATES)}")
    return TEMPLATES[name].expand(options or TemplateOptions())
