"""Built-in templates. Each expands to an ordinary graph, its run input and a runtime
plan: exactly what a user could write by hand, and print with ``zeroshot template show``.

>>> sorted(template_names())
['auto-research', 'single-worker', 'software-change']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zeroshot_kernel.features import contributions
from zeroshot_kernel.sandbox import SandboxMode
from zeroshot_kernel.templates.single_worker import single_worker_graph


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
    delivery: str = "pr"
    """software-change: none, push, pr or ship."""
    tier: str = "standard"
    """software-change: the review tier, micro, standard or high-risk (``auto`` is resolved
    before)."""
    checks: tuple[str, ...] = ()
    """software-change: commands whose receipts are the run's evidence."""
    prepared: dict[str, Any] | None = None
    """software-change: the prepared delivery (remote, target branch, base); a
    placeholder when not given."""
    classification: dict[str, Any] | None = None
    """software-change: the classification that chose ``tier`` under ``auto``."""
    sandbox: SandboxMode | None = None
    """How model-written code is contained: ``bwrap`` (default) or ``none`` (UNCONTAINED)."""
    dask: str | None = None
    """auto-research: the dask.distributed scheduler its experiments run on (default: this
    machine)."""
    parallel: int | None = None
    """auto-research: candidates a round measures at once (default: the task's)."""


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


def agent_binding(
    options: TemplateOptions, *, scope: str = "execution", agent: str | None = None
) -> dict[str, Any]:
    binding: dict[str, Any] = {"kind": "agent", "sessionScope": scope}
    if options.harness == "local" and agent is not None:
        binding["agent"] = agent
    if options.harness == "openai":
        binding["connections"] = [OPENAI_CONNECTION]
    return binding


def runtime_plan(options: TemplateOptions, nodes: dict[str, Any]) -> dict[str, Any]:
    plan: dict[str, Any] = {"harness": options.harness, "nodes": nodes}
    if options.provider:
        plan["provider"] = options.provider
    if options.model:
        plan["model"] = options.model
    if options.max_tokens is not None:
        plan["maxTokens"] = options.max_tokens
    if options.sandbox is not None:
        plan["sandbox"] = options.sandbox
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
        raise ValueError(f"base URL {url!r} is not an http(s) URL such as http://127.0.0.1:8080/v1")
    return stripped


def _single_worker(options: TemplateOptions) -> Expansion:
    return Expansion(
        graph=single_worker_graph(),
        input={"task": options.task},
        runtime=runtime_plan(options, {"worker": agent_binding(options, scope="node_instance")}),
    )


SINGLE_WORKER = Template(
    "single-worker", "One agent completes a task; an error fails the run.", _single_worker
)


def templates() -> dict[str, Template]:
    """Template name -> template, as the installed features register them (the core's
    ``single-worker`` among the built-ins, see :mod:`zeroshot_kernel.builtins`)."""
    return {name: load() for name, load in contributions("templates").items()}


def template_names() -> list[str]:
    return list(templates())


def expand_template(name: str, options: TemplateOptions | None = None) -> Expansion:
    """Expand a template; ``KeyError`` names the known ones, ``ValueError`` says why an
    option is out of range (``iterations`` outside 1..100)."""
    known = templates()
    if name not in known:
        raise KeyError(f"unknown template {name!r}; known: {', '.join(known)}")
    return known[name].expand(options or TemplateOptions())
