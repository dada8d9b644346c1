"""The worker registry and the admission checks that hold a graph to its workers' contracts.

A registry resolves one exact ``name@version``; there is no "latest". Entries are kept as
raw documents and parsed only when a graph uses them, so one bad entry rejects exactly the
graphs (and nodes) that depend on it rather than the whole registry file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from zeroshot_kernel.admission.bounds import diagnostic_at, located_nodes
from zeroshot_kernel.contract.diagnostics import (
    DiagnosticCode,
    GraphDiagnostic,
    sorted_diagnostics,
)
from zeroshot_kernel.contract.graph import GraphSpec, StepNode, VerifierNode
from zeroshot_kernel.contract.parse import diagnostics_from_validation
from zeroshot_kernel.contract.payload import is_subtype
from zeroshot_kernel.contract.reading import DocumentError, loads_document, read_text, shorten
from zeroshot_kernel.contract.values import MAX_REFERENCE_LENGTH, REFERENCE_PATTERN
from zeroshot_kernel.contract.worker_descriptors import WorkerDescriptor
from zeroshot_kernel.exceptions import NotFound

_REFERENCE = re.compile(REFERENCE_PATTERN)


class RegistryError(NotFound):
    """``ref`` cannot be used; ``str(error)`` says why in words a graph author can act on."""

    def __init__(self, ref: str, message: str) -> None:
        super().__init__(message)
        self.ref = ref


class WorkerNotFound(RegistryError):
    def __init__(self, ref: str) -> None:
        super().__init__(ref, f"worker {ref} is not in the registry; check the name and version")


class WorkerVersionUnavailable(RegistryError):
    def __init__(self, ref: str) -> None:
        super().__init__(
            ref, f"worker {ref} is registered but this version is unavailable; pick another"
        )


class InvalidWorkerDescriptor(RegistryError):
    """The registry holds an entry for ``ref`` that is not a valid descriptor."""

    def __init__(self, ref: str, error: ValidationError, document: Any) -> None:
        problems = [
            f"{d.readable_path()}: {d.message}"
            for d in diagnostics_from_validation(error, document)
        ]
        super().__init__(
            ref, f"worker {ref} has an invalid registry descriptor: {'; '.join(problems)}"
        )
        self.problems = problems


class RegistryFileError(DocumentError):
    """A registry file that cannot be read as a JSON object of ``name@version`` entries."""


class WorkerRegistry(Protocol):
    def resolve(self, ref: str) -> WorkerDescriptor:
        """The descriptor of exactly ``ref``; raises a ``RegistryError`` subclass otherwise."""
        ...


class MappingRegistry:
    """An in-memory registry: ``name@version`` → descriptor document (or model), or ``None``
    for a version that exists but is unavailable."""

    def __init__(self, entries: Mapping[str, Any]) -> None:
        self._entries = dict(entries)

    def resolve(self, ref: str) -> WorkerDescriptor:
        if ref not in self._entries:
            raise WorkerNotFound(ref)
        entry = self._entries[ref]
        if entry is None:
            raise WorkerVersionUnavailable(ref)
        if isinstance(entry, WorkerDescriptor):
            return entry
        try:
            return WorkerDescriptor.from_wire(entry)
        except ValidationError as error:
            raise InvalidWorkerDescriptor(ref, error, entry) from error


class FileRegistry(MappingRegistry):
    """A registry read from one JSON file; entries are validated when resolved, not here."""

    @classmethod
    def load(cls, path: str | Path) -> FileRegistry:
        """Read ``path``; raises ``RegistryFileError`` if it is not a JSON object of refs."""
        shown = shorten(str(path))
        try:
            text = read_text(path)
        except DocumentError as error:
            raise RegistryFileError(f"cannot read registry file {error}") from None
        try:
            document = loads_document(text, yaml_allowed=False)
        except DocumentError as error:
            raise RegistryFileError(f"registry file {shown} is {error}") from None
        if not isinstance(document, dict):
            raise RegistryFileError(
                f"registry file {shown} must hold a JSON object mapping name@version to a "
                "descriptor (or null)"
            )
        bad = [
            key for key in document if len(key) > MAX_REFERENCE_LENGTH or not _REFERENCE.match(key)
        ]
        if bad:
            raise RegistryFileError(
                f"registry file {path}: keys must be worker references like 'name@1'; "
                f"fix {', '.join(repr(key) for key in bad)}"
            )
        return cls(document)


# --- admission checks -------------------------------------------------------------------

# Several findings at one node are ordered by message. Each message below starts with
# words chosen so that this order matches the reference engine's for the same findings.


def registry_diagnostics(graph: GraphSpec, registry: WorkerRegistry) -> list[GraphDiagnostic]:
    """Every way the graph's executables disagree with their registered workers.

    Executables are checked in source order; each finding sits at the node's path with the
    node as its only related node.
    """
    diagnostics: list[GraphDiagnostic] = []
    for entry in located_nodes(graph):
        executable = entry.node
        if not isinstance(executable, StepNode | VerifierNode):
            continue
        for code, message in _findings(graph, executable, registry):
            diagnostics.append(diagnostic_at(code, message, entry.path, [executable.name]))
    return sorted_diagnostics(diagnostics)


def _findings(
    graph: GraphSpec, executable: StepNode | VerifierNode, registry: WorkerRegistry
) -> Iterator[tuple[DiagnosticCode, str]]:
    ref = executable.worker
    try:
        descriptor = registry.resolve(ref)
    except RegistryError as error:
        yield "invalid_graph_shape", str(error)
        return
    if descriptor.worker != ref:
        yield (
            "invalid_graph_shape",
            f"registry entry for {ref} describes worker {descriptor.worker}; "
            "fix the registry entry",
        )
    if not descriptor.supports(graph.profile):
        yield (
            "invalid_graph_shape",
            f"graph profile {graph.profile} is not among those worker {ref} supports "
            f"({', '.join(descriptor.graph_profiles)})",
        )
    if not is_subtype(executable.input, descriptor.contract.input):
        yield (
            "schema_safety",
            f"worker {ref} does not accept every value of the node's input type; "
            "narrow the node's input to a subtype of the worker's",
        )
    if not is_subtype(descriptor.contract.output, executable.output):
        yield (
            "schema_safety",
            f"output type of worker {ref} is not a subtype of the node's output; "
            "widen the node's output or choose a matching worker",
        )
    verifier = descriptor.contract.verifier
    if isinstance(executable, StepNode):
        if verifier is not None:
            yield (
                "invalid_graph_shape",
                f"step node uses {ref}, a verifier worker; make the node a verifier or "
                "use a non-verifier worker",
            )
        return
    if verifier is None:
        yield (
            "invalid_graph_shape",
            f"verifier node uses {ref}, which is not a verifier worker; make the node "
            "a step or use a verifier worker",
        )
        return
    for name, labels in sorted(verifier.signals.items()):
        declared = executable.signals.get(name)
        if declared is None:
            yield (
                "schema_safety",
                f"signal {name} emitted by worker {ref} is not declared on the node; "
                "declare it in signals",
            )
        elif not set(labels) <= set(declared):
            extra = sorted(set(labels) - set(declared))
            yield (
                "schema_safety",
                f"labels of signal {name} from worker {ref} are not all declared on the "
                f"node; add {', '.join(extra)} to the node's signal",
            )
    if not is_subtype(verifier.diagnostic, executable.diagnostic):
        yield (
            "schema_safety",
            f"diagnostic type of worker {ref} is not a subtype of the node's diagnostic; "
            "widen the node's diagnostic",
        )


__all__ = [
    "FileRegistry",
    "InvalidWorkerDescriptor",
    "MappingRegistry",
    "RegistryError",
    "RegistryFileError",
    "WorkerNotFound",
    "WorkerRegistry",
    "WorkerVersionUnavailable",
    "registry_diagnostics",
]
