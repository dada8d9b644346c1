"""GraphSpec: the caller-authored graph, wire-compatible with ``openengine.graph.full/v1``.

Selectors, guards and bindings are structured data, never strings of code: a graph can
only route on finite control labels and copy typed values along declared paths.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.contract.payload import PayloadType
from zeroshot_kernel.contract.values import (
    MAX_COLLECTION_ITEMS,
    EnumLabel,
    EnumSet,
    FieldName,
    FieldPath,
    Instructions,
    NodeName,
    PolicyRef,
    PositiveInteger,
    WorkerRef,
)

FULL_PROFILE = "openengine.graph.full/v1"
SINGLE_WORKER_PROFILE = "openengine.graph.single-worker/v1"
GraphProfile = Literal["openengine.graph.full/v1", "openengine.graph.single-worker/v1"]

NODE_KINDS = ("step", "verifier", "seq", "choice", "par", "loop", "map", "succeed", "fail")
WORKER_ERROR_CODES = ("timeout", "crash", "malformed", "refusal")


# --- selectors -------------------------------------------------------------------------


class StateSelector(ContractModel):
    """Reads the enclosing group's state at ``path``."""

    source: Literal["state"]
    path: FieldPath


class ItemSelector(ContractModel):
    """Reads the current map item at ``path``; valid only inside a map body."""

    source: Literal["item"]
    path: FieldPath


DataSelector = Annotated[StateSelector | ItemSelector, Field(discriminator="source")]


class NodeOutputSelector(ContractModel):
    """Reads a channel of an executable's last outcome; for ``signal``, ``path[0]`` is the
    signal name and the value is its label."""

    node: NodeName
    channel: Literal["out", "signal", "diagnostic"]
    path: FieldPath


class ControlSelector(ContractModel):
    """Names a finite control value: a verifier signal, an executable's error, or a group
    outcome (``terminated``, ``overflow``, ``joined``, ``raced``)."""

    name: NodeName
    source: Literal["signal", "error", "group"]
    field: FieldName | None = None


# --- guards -----------------------------------------------------------------------------


class InGuard(ContractModel):
    kind: Literal["in"]
    value: ControlSelector
    labels: EnumSet


class AllGuard(ContractModel):
    kind: Literal["all"]
    guards: Annotated[list[Guard], Field(min_length=1, max_length=MAX_COLLECTION_ITEMS)]


class AnyGuard(ContractModel):
    kind: Literal["any"]
    guards: Annotated[list[Guard], Field(min_length=1, max_length=MAX_COLLECTION_ITEMS)]


class NotGuard(ContractModel):
    kind: Literal["not"]
    guard: Guard


class KOfNGuard(ContractModel):
    kind: Literal["k_of_n"]
    count: PositiveInteger
    values: Annotated[list[ControlSelector], Field(min_length=1, max_length=MAX_COLLECTION_ITEMS)]
    labels: EnumSet


class KOfMapGuard(ContractModel):
    kind: Literal["k_of_map"]
    count: PositiveInteger
    value: ControlSelector
    labels: EnumSet


Guard = Annotated[
    InGuard | AllGuard | AnyGuard | NotGuard | KOfNGuard | KOfMapGuard,
    Field(discriminator="kind"),
]


# --- joins ------------------------------------------------------------------------------


class AllJoin(ContractModel):
    kind: Literal["all"]


class AnyJoin(ContractModel):
    kind: Literal["any"]


class QuorumJoin(ContractModel):
    kind: Literal["quorum"]
    count: PositiveInteger


class FirstJoin(ContractModel):
    kind: Literal["first"]
    when: Guard


Join = Annotated[AllJoin | AnyJoin | QuorumJoin | FirstJoin, Field(discriminator="kind")]


# --- bindings ---------------------------------------------------------------------------


class InputBinding(ContractModel):
    """Copies a state or item value into ``target`` of an input (or a succeed output)."""

    target: FieldPath
    value: DataSelector


class WriteBinding(ContractModel):
    """Copies a channel of an executable's outcome into ``target`` of the enclosing state."""

    target: FieldPath
    value: NodeOutputSelector


InputBindings = Annotated[list[InputBinding], Field(max_length=MAX_COLLECTION_ITEMS)]
WriteBindings = Annotated[list[WriteBinding], Field(max_length=MAX_COLLECTION_ITEMS)]
PromotedPaths = Annotated[list[FieldPath], Field(max_length=MAX_COLLECTION_ITEMS)]


# --- nodes ------------------------------------------------------------------------------


def _absent_if_none(value: object) -> bool:
    return value is None


class _Node(ContractModel):
    name: NodeName

    def child_nodes(self) -> list[GraphNode]:
        """Direct children in authored order (choice: branches, then ``otherwise``)."""
        return []

    def walk(self) -> Iterator[GraphNode]:
        """This node and every descendant, pre-order."""
        yield self  # type: ignore[misc]
        for child in self.child_nodes():
            yield from child.walk()


class StepNode(_Node):
    kind: Literal["step"]
    worker: WorkerRef
    instructions: Instructions | None = Field(default=None, exclude_if=_absent_if_none)
    input: PayloadType
    output: PayloadType
    input_bindings: InputBindings
    write_bindings: WriteBindings
    timeout_ms: PositiveInteger
    attempts: PositiveInteger


class VerifierNode(_Node):
    kind: Literal["verifier"]
    worker: WorkerRef
    instructions: Instructions | None = Field(default=None, exclude_if=_absent_if_none)
    input: PayloadType
    output: PayloadType
    input_bindings: InputBindings
    write_bindings: WriteBindings
    timeout_ms: PositiveInteger
    attempts: PositiveInteger
    signals: Annotated[dict[FieldName, EnumSet], Field(max_length=MAX_COLLECTION_ITEMS)]
    diagnostic: PayloadType


class SeqNode(_Node):
    kind: Literal["seq"]
    state: PayloadType
    children: Annotated[list[GraphNode], Field(min_length=1, max_length=MAX_COLLECTION_ITEMS)]
    promoted_state_paths: PromotedPaths

    def child_nodes(self) -> list[GraphNode]:
        return list(self.children)


class ChoiceBranch(ContractModel):
    when: Guard
    node: GraphNode


class ChoiceNode(_Node):
    kind: Literal["choice"]
    state: PayloadType
    branches: Annotated[list[ChoiceBranch], Field(min_length=1, max_length=MAX_COLLECTION_ITEMS)]
    otherwise: GraphNode | None = None
    promoted_state_paths: PromotedPaths

    def child_nodes(self) -> list[GraphNode]:
        nodes = [branch.node for branch in self.branches]
        return [*nodes, self.otherwise] if self.otherwise is not None else nodes


class ParNode(_Node):
    kind: Literal["par"]
    state: PayloadType
    branches: Annotated[list[GraphNode], Field(min_length=1, max_length=MAX_COLLECTION_ITEMS)]
    promoted_state_paths: PromotedPaths
    join: Join

    def child_nodes(self) -> list[GraphNode]:
        return list(self.branches)


class LoopNode(_Node):
    kind: Literal["loop"]
    state: PayloadType
    body: GraphNode
    until: Guard | None = Field(default=None, exclude_if=_absent_if_none)
    max_iterations: PositiveInteger
    promoted_state_paths: PromotedPaths

    def child_nodes(self) -> list[GraphNode]:
        return [self.body]


class MapNode(_Node):
    kind: Literal["map"]
    state: PayloadType
    body: GraphNode
    over: DataSelector
    max_items: PositiveInteger
    promoted_state_paths: PromotedPaths

    def child_nodes(self) -> list[GraphNode]:
        return [self.body]


class SucceedNode(_Node):
    kind: Literal["succeed"]
    output: PayloadType
    bindings: InputBindings


class FailNode(_Node):
    kind: Literal["fail"]
    reason: EnumLabel

    @field_validator("reason")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value == "unhandled":
            raise ValueError("'unhandled' is reserved for the engine; name the failure instead")
        return value


GraphNode = Annotated[
    StepNode
    | VerifierNode
    | SeqNode
    | ChoiceNode
    | ParNode
    | LoopNode
    | MapNode
    | SucceedNode
    | FailNode,
    Field(discriminator="kind"),
]
ExecutableNode = StepNode | VerifierNode
GroupNode = SeqNode | ChoiceNode | ParNode | LoopNode | MapNode
TerminalNode = SucceedNode | FailNode

for _model in (
    AllGuard,
    AnyGuard,
    NotGuard,
    FirstJoin,
    SeqNode,
    ChoiceBranch,
    ChoiceNode,
    ParNode,
    LoopNode,
    MapNode,
):
    _model.model_rebuild()


# --- the graph --------------------------------------------------------------------------


class PolicyBinding(ContractModel):
    policy: PolicyRef
    default: Literal["deny"]


class GraphSpec(ContractModel):
    """A caller-authored graph: profile, declared initial input, policy and the root node."""

    profile: GraphProfile
    initial_input: PayloadType
    policy: PolicyBinding
    root: GraphNode

    @model_validator(mode="after")
    def _single_worker_is_one_step(self) -> GraphSpec:
        if self.profile == SINGLE_WORKER_PROFILE and not isinstance(self.root, StepNode):
            raise ValueError(f"a {SINGLE_WORKER_PROFILE} graph is a lone root step")
        return self

    def nodes(self) -> Iterator[GraphNode]:
        """Every node, pre-order."""
        return self.root.walk()


# --- bounds and compiled IR -------------------------------------------------------------


class AcyclicTermination(ContractModel):
    kind: Literal["acyclic"]
    order: Annotated[list[NodeName], Field(min_length=1)]


class BoundedTermination(ContractModel):
    kind: Literal["bounded"]
    ranking: Annotated[list[FieldPath], Field(min_length=1)]
    max_iterations: PositiveInteger


TerminationWitness = Annotated[AcyclicTermination | BoundedTermination, Field(discriminator="kind")]


class StructuralBounds(ContractModel):
    """What admission proved: how the graph terminates and how much it can run."""

    termination: TerminationWitness
    max_node_executions: PositiveInteger
    peak_concurrency: PositiveInteger
    attempts_per_node: dict[NodeName, PositiveInteger]


class CompiledGraphIr(GraphSpec):
    """A verified graph together with its proven bounds."""

    bounds: StructuralBounds


__all__ = [
    "FULL_PROFILE",
    "NODE_KINDS",
    "SINGLE_WORKER_PROFILE",
    "WORKER_ERROR_CODES",
    "AcyclicTermination",
    "AllGuard",
    "AllJoin",
    "AnyGuard",
    "AnyJoin",
    "BoundedTermination",
    "ChoiceBranch",
    "ChoiceNode",
    "CompiledGraphIr",
    "ControlSelector",
    "DataSelector",
    "ExecutableNode",
    "FailNode",
    "FirstJoin",
    "GraphNode",
    "GraphProfile",
    "GraphSpec",
    "GroupNode",
    "Guard",
    "InGuard",
    "InputBinding",
    "ItemSelector",
    "Join",
    "KOfMapGuard",
    "KOfNGuard",
    "LoopNode",
    "MapNode",
    "NodeOutputSelector",
    "NotGuard",
    "ParNode",
    "PolicyBinding",
    "QuorumJoin",
    "SeqNode",
    "StateSelector",
    "StepNode",
    "StructuralBounds",
    "SucceedNode",
    "TerminalNode",
    "TerminationWitness",
    "VerifierNode",
    "WriteBinding",
]
