"""Worker descriptors: what a registry says about a worker, and nothing that could run it.

A descriptor names a worker by stable reference, pins its protocol binding, and declares
the typed contract the graph is checked against. It carries no command, endpoint, path,
callback, credential value or bytes: every such field is rejected as unknown, so secrets
and execution details can only come from the runtime plan.

Rule violations raise ``WorkerContractViolation`` (a ``ValueError``) inside validation, so
``pydantic.ValidationError`` details keep both a location and a stable ``code``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationInfo, field_validator, model_validator

from zeroshot_kernel.contract.graph import SINGLE_WORKER_PROFILE, WORKER_ERROR_CODES, GraphProfile
from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.contract.outcome import ErrorCode, PrintableText, Redaction
from zeroshot_kernel.contract.payload import PayloadType
from zeroshot_kernel.contract.values import (
    MAX_COLLECTION_ITEMS,
    EnumSet,
    FieldName,
    PolicyRef,
    StableRef,
    WorkerRef,
)
from zeroshot_kernel.exceptions import InvalidInput

LEGACY_WORKER = "legacy.zeroshot.ship@1"

WorkerProtocol = Literal["acp", "a2a", "legacy_zeroshot", "builtin"]
PINNED_BINDINGS: dict[str, tuple[str, str]] = {
    "acp": ("1", "openengine.worker.acp/v1"),
    "a2a": ("1.0", "openengine.worker.a2a/1.0"),
    "legacy_zeroshot": ("1", "legacy.zeroshot.ship/v1"),
    "builtin": ("1", "openengine.worker.builtin/v1"),
}
"""The only (version, profile) pair each protocol may declare."""

WorkerContractCode = Literal[
    "UNSUPPORTED_WORKER_BINDING",
    "EMPTY_GRAPH_PROFILES",
    "DUPLICATE_GRAPH_PROFILES",
    "EMPTY_WORKER_ERRORS",
    "DUPLICATE_WORKER_ERRORS",
    "INCOMPLETE_WORKER_ERRORS",
    "EMPTY_ARTIFACT_TYPES",
    "DUPLICATE_ARTIFACT_TYPES",
    "EMPTY_MEDIA_TYPES",
    "DUPLICATE_MEDIA_TYPES",
    "DUPLICATE_CREDENTIAL_REQUIREMENTS",
    "INVALID_LEGACY_BINDING",
    "INVALID_BUILTIN_BINDING",
]


class WorkerContractViolation(InvalidInput):
    """A descriptor rule that the wire types alone cannot express; ``code`` is stable."""

    def __init__(self, code: WorkerContractCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def _require_unique(
    values: Sequence[object],
    what: str,
    empty: WorkerContractCode | None,
    duplicate: WorkerContractCode,
) -> None:
    if empty is not None and not values:
        raise WorkerContractViolation(empty, f"{what} must list at least one entry")
    seen: set[object] = set()
    repeated: set[object] = set()
    for value in values:
        (repeated if value in seen else seen).add(value)
    if repeated:
        extra = ", ".join(sorted(str(value) for value in repeated))
        raise WorkerContractViolation(
            duplicate, f"{what} must not repeat entries; remove the extra {extra}"
        )


CredentialHandle = StableRef
"""An opaque registry handle (``name@N``) that selects secret material but never holds it."""


class WorkerProtocolBinding(ContractModel):
    """How the engine talks to the worker; each protocol is pinned to one version/profile."""

    protocol: WorkerProtocol
    version: str
    profile: str

    @model_validator(mode="after")
    def _pinned(self) -> WorkerProtocolBinding:
        version, profile = PINNED_BINDINGS[self.protocol]
        if (self.version, self.profile) != (version, profile):
            raise WorkerContractViolation(
                "UNSUPPORTED_WORKER_BINDING",
                f"protocol {self.protocol!r} is supported only as version {version!r} with "
                f"profile {profile!r}; got version {self.version!r}, profile {self.profile!r}",
            )
        return self


class CapabilityPolicy(ContractModel):
    autonomy: Literal["strict"]
    permission_policy: PolicyRef


class VerifierContract(ContractModel):
    """The signals (each a closed label set) and diagnostic type a verifier worker emits."""

    signals: Annotated[dict[FieldName, EnumSet], Field(max_length=MAX_COLLECTION_ITEMS)]
    diagnostic: PayloadType


class WorkerContract(ContractModel):
    """Typed input and output, an optional verifier contract, and the error codes it may
    return, which must be exactly the four runtime codes so every failure is routable."""

    input: PayloadType
    output: PayloadType
    verifier: VerifierContract | None
    errors: list[ErrorCode]

    @field_validator("errors")
    @classmethod
    def _all_runtime_errors(cls, errors: list[str]) -> list[str]:
        _require_unique(errors, "contract errors", "EMPTY_WORKER_ERRORS", "DUPLICATE_WORKER_ERRORS")
        if set(errors) != set(WORKER_ERROR_CODES):
            missing = [code for code in WORKER_ERROR_CODES if code not in errors]
            raise WorkerContractViolation(
                "INCOMPLETE_WORKER_ERRORS",
                f"contract errors must list all of {', '.join(WORKER_ERROR_CODES)}; "
                f"add {', '.join(missing)}",
            )
        return errors


class ArtifactResultProfile(ContractModel):
    """Which artifact types and media types a worker may return, and the least redaction."""

    allowed_type_ids: list[StableRef]
    allowed_media_types: list[PrintableText]
    minimum_redaction: Redaction

    @field_validator("allowed_type_ids")
    @classmethod
    def _type_ids(cls, values: list[str]) -> list[str]:
        _require_unique(
            values, "allowedTypeIds", "EMPTY_ARTIFACT_TYPES", "DUPLICATE_ARTIFACT_TYPES"
        )
        return values

    @field_validator("allowed_media_types")
    @classmethod
    def _media_types(cls, values: list[str]) -> list[str]:
        _require_unique(values, "allowedMediaTypes", "EMPTY_MEDIA_TYPES", "DUPLICATE_MEDIA_TYPES")
        return values


class WorkerDescriptor(ContractModel):
    """A registry entry for one exact worker version."""

    worker: WorkerRef
    graph_profiles: list[GraphProfile]
    binding: WorkerProtocolBinding
    contract: WorkerContract
    capability_policy: CapabilityPolicy
    artifact_profile: ArtifactResultProfile
    credential_requirements: list[CredentialHandle]

    @field_validator("graph_profiles")
    @classmethod
    def _profiles(cls, values: list[str]) -> list[str]:
        _require_unique(values, "graphProfiles", "EMPTY_GRAPH_PROFILES", "DUPLICATE_GRAPH_PROFILES")
        return values

    @field_validator("credential_requirements")
    @classmethod
    def _credentials(cls, values: list[str], info: ValidationInfo) -> list[str]:
        _require_unique(values, "credentialRequirements", None, "DUPLICATE_CREDENTIAL_REQUIREMENTS")
        binding = info.data.get("binding")
        if values and binding is not None and binding.protocol == "builtin":
            raise WorkerContractViolation(
                "INVALID_BUILTIN_BINDING",
                "builtin workers run inside the engine and take no credentials; "
                "make credentialRequirements empty",
            )
        return values

    @model_validator(mode="after")
    def _legacy_is_pinned(self) -> WorkerDescriptor:
        is_legacy_protocol = self.binding.protocol == "legacy_zeroshot"
        is_legacy_worker = self.worker == LEGACY_WORKER
        if not (is_legacy_protocol or is_legacy_worker):
            return self
        problems = _legacy_problems(self)
        if problems:
            raise WorkerContractViolation(
                "INVALID_LEGACY_BINDING",
                f"the legacy_zeroshot binding is reserved for {LEGACY_WORKER} with its pinned "
                f"contract; {'; '.join(problems)}",
            )
        return self

    def supports(self, profile: str) -> bool:
        return profile in self.graph_profiles


def _legacy_problems(descriptor: WorkerDescriptor) -> list[str]:
    contract = descriptor.contract
    checks = [
        (descriptor.worker == LEGACY_WORKER, f"worker must be {LEGACY_WORKER}"),
        (descriptor.binding.protocol == "legacy_zeroshot", "binding must be legacy_zeroshot"),
        (
            descriptor.graph_profiles == [SINGLE_WORKER_PROFILE],
            f"graphProfiles must be exactly [{SINGLE_WORKER_PROFILE}]",
        ),
        (contract.input == LEGACY_SHIP_REQUEST, "contract.input must be the legacy ship request"),
        (contract.output == LEGACY_SHIP_RESULT, "contract.output must be the legacy ship result"),
        (contract.verifier is None, "contract.verifier must be null"),
        (
            contract.errors == list(WORKER_ERROR_CODES),
            f"contract.errors must be exactly [{', '.join(WORKER_ERROR_CODES)}]",
        ),
    ]
    return [problem for ok, problem in checks if not ok]


# --- the pinned legacy contract -------------------------------------------------------


def _record(**fields: tuple[Any, bool]) -> dict[str, Any]:
    return {
        "kind": "record",
        "fields": {name: {"type": t, "required": r} for name, (t, r) in fields.items()},
    }


def _enum(*values: str) -> dict[str, Any]:
    return {"kind": "enum", "values": list(values)}


_STRING = {"kind": "string"}
_INTEGER = {"kind": "integer"}
_ARTIFACT_REF = _record(
    artifactId=(_STRING, True),
    sha256=(_STRING, True),
    byteLength=(_INTEGER, True),
    mediaType=(_STRING, True),
    typeId=(_STRING, True),
    producer=(_record(node=(_STRING, True), worker=(_STRING, True)), True),
    lineage=(
        _record(generation=(_INTEGER, True), runId=(_STRING, True), attempt=(_INTEGER, True)),
        True,
    ),
    redaction=(_enum("public", "internal", "confidential", "restricted"), True),
)
_ARTIFACTS = {"kind": "array", "items": _ARTIFACT_REF}
_PAYLOAD: TypeAdapter[PayloadType] = TypeAdapter(PayloadType)

LEGACY_SHIP_REQUEST: PayloadType = _PAYLOAD.validate_python(
    _record(
        source=(_enum("issue", "prompt", "artifact"), True),
        issue=(_STRING, False),
        prompt=(_STRING, False),
        artifacts=(_ARTIFACTS, True),
        isolationProfile=(_STRING, True),
        providerProfile=(_STRING, True),
        repository=(_STRING, True),
        provider=(_STRING, True),
        modelLevel=(_enum("level1", "level2", "level3"), True),
    )
)
"""The input type every ``legacy.zeroshot.ship@1`` descriptor must declare."""

LEGACY_SHIP_RESULT: PayloadType = _PAYLOAD.validate_python(
    _record(
        summary=(_STRING, True),
        status=(_enum("succeeded", "failed"), True),
        artifacts=(_ARTIFACTS, True),
        repository=(_STRING, False),
        branch=(_STRING, False),
        headRevision=(_STRING, False),
        pullRequestUrl=(_STRING, False),
    )
)
"""The output type every ``legacy.zeroshot.ship@1`` descriptor must declare."""


__all__ = [
    "LEGACY_SHIP_REQUEST",
    "LEGACY_SHIP_RESULT",
    "LEGACY_WORKER",
    "PINNED_BINDINGS",
    "ArtifactResultProfile",
    "CapabilityPolicy",
    "CredentialHandle",
    "VerifierContract",
    "WorkerContract",
    "WorkerContractCode",
    "WorkerContractViolation",
    "WorkerDescriptor",
    "WorkerProtocol",
    "WorkerProtocolBinding",
]
