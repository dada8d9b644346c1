"""The runtime plan: which harness, provider and model run each executable node.

A plan names environment variables and named connections but never holds their values:
values are read from the environment at submit and resume, never written to the ledger.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.contract.values import NodeName
from zeroshot_kernel.sandbox import DEFAULT_MODE, SandboxMode

CORE_AGENT_HARNESSES = ("local", "python", "claude", "codex", "openai")
"""The agent harnesses every installation has; a feature may register more (admission checks
a plan's names against what is installed, see ``harness.registry``)."""
HarnessName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]*$", max_length=64)]
LLM_HARNESSES: frozenset[str] = frozenset({"claude", "codex", "openai"})
Effort = Literal["low", "medium", "high", "xhigh", "max"]
SessionScope = Literal["execution", "node_instance"]
MAX_ENV_NAMES = 64
DEFAULT_MAX_TOKENS = 4096
"""The reply budget (``max_tokens``) of each request when neither the plan nor the node
sets ``maxTokens`` (read by the ``openai`` harness)."""
MAX_MAX_TOKENS = 1_000_000

MaxTokens = Annotated[int, Field(ge=1, le=MAX_MAX_TOKENS)]

EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=128)]
ConnectionName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]*$", max_length=64)]
CallablePath = Annotated[
    str,
    Field(
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$",
        description="module.path:function",
    ),
]

OPTIONAL_KEY_HARNESSES: frozenset[str] = frozenset({"openai"})
"""Harnesses whose connection keys may be unset: an OpenAI-compatible server on this
machine (llama.cpp, Ollama, vLLM) wants none; one that does answers 401, recorded as
``authentication_required``. Other declared names must be set when an execution starts."""

KNOWN_CONNECTIONS: dict[str, str] = {
    "github": "GH_TOKEN",
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}
"""Well-known named connections and the environment variable each reads."""


class Connection(ContractModel):
    """A named connection: the environment variable holding its secret, and optionally
    a base URL (for OpenAI-compatible servers)."""

    env: EnvName
    base_url: str | None = None


class AgentBinding(ContractModel):
    """How one executable node is run. Fields left out inherit the plan's defaults."""

    kind: Literal["agent"] = "agent"
    harness: HarnessName | None = None
    provider: str | None = None
    model: str | None = None
    effort: Effort | None = None
    session_scope: SessionScope = "execution"
    callable: CallablePath | None = None
    agent: str | None = None
    """For the ``local`` harness: which embedded agent (e.g. ``research.scout``)."""
    max_tokens: MaxTokens | None = None
    """For the ``openai`` harness: the most tokens one reply may take (the plan's
    ``maxTokens``, else :data:`DEFAULT_MAX_TOKENS`, when left out)."""
    env: list[EnvName] = Field(default_factory=list)
    connections: list[ConnectionName] = Field(default_factory=list)


class GitDeliveryBinding(ContractModel):
    """The trusted delivery node: publishes reviewed work; never an agent."""

    kind: Literal["git_delivery"]
    env: list[EnvName] = Field(default_factory=list)
    connections: list[ConnectionName] = Field(default_factory=list)


class TrustedBinding(ContractModel):
    """A node run by trusted code of the engine, never an agent: ``code`` names it (see
    :func:`zeroshot_kernel.harness.trusted_harness.trusted_code`). It gets no secrets."""

    kind: Literal["trusted"]
    code: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_.-]*$", max_length=64)]
    env: list[EnvName] = Field(default_factory=list, max_length=0)
    connections: list[ConnectionName] = Field(default_factory=list, max_length=0)


NodeBinding = Annotated[
    AgentBinding | GitDeliveryBinding | TrustedBinding, Field(discriminator="kind")
]


class RuntimePlan(ContractModel):
    """Per-node harness bindings plus plan-wide defaults.

    Example::

        {"harness": "python",
         "nodes": {"work": {"kind": "agent", "callable": "mypkg.workers:work"}}}
    """

    harness: HarnessName = "local"
    provider: str | None = None
    model: str | None = None
    effort: Effort | None = None
    max_tokens: MaxTokens | None = None
    """For the ``openai`` harness: each reply's token budget (default
    :data:`DEFAULT_MAX_TOKENS`); a node's ``maxTokens`` wins."""
    nodes: dict[NodeName, NodeBinding] = Field(default_factory=dict)
    connections: dict[ConnectionName, Connection] = Field(default_factory=dict)
    """Custom named connections, or overrides of the well-known ones."""
    sandbox: SandboxMode | None = None
    """How processes that run model-written code are contained: ``bwrap`` (the default,
    also when left out) or ``none`` (UNCONTAINED)."""

    @property
    def sandbox_mode(self) -> SandboxMode:
        return self.sandbox or DEFAULT_MODE

    def to_wire(self) -> dict[str, Any]:
        """Compact form: unset optional fields are left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @model_validator(mode="after")
    def _env_budget(self) -> RuntimePlan:
        names = {name for binding in self.nodes.values() for name in binding.env}
        if len(names) > MAX_ENV_NAMES:
            raise ValueError(f"a run may declare at most {MAX_ENV_NAMES} environment names")
        return self

    def harness_of(self, node: str) -> str:
        binding = self.nodes.get(node)
        if isinstance(binding, GitDeliveryBinding):
            return "git_delivery"
        if isinstance(binding, TrustedBinding):
            return "trusted"
        if binding is not None and binding.harness is not None:
            return binding.harness
        return self.harness

    def connection(self, name: str) -> Connection | None:
        if name in self.connections:
            return self.connections[name]
        env = KNOWN_CONNECTIONS.get(name)
        return Connection(env=env) if env else None

    def secret_env_names(self) -> set[str]:
        """Every environment name whose value must be redacted: declared env names and
        the variables behind the connections the nodes use."""
        names: set[str] = set()
        for binding in self.nodes.values():
            names.update(binding.env)
            for connection_name in binding.connections:
                connection = self.connection(connection_name)
                if connection is not None:
                    names.add(connection.env)
        return names
