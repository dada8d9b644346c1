"""What an execution returns: artifacts it references and its typed outcome.

Outcomes are closed: a worker either verified (a step's output), answered as a verifier
(output, one label per signal, a diagnostic), or failed with one of four error codes and
a reason that must fit the code.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.contract.values import (
    MAX_SAFE_INTEGER,
    EnumLabel,
    FieldName,
    NodeName,
    NonNegativeInteger,
    PositiveInteger,
    StableRef,
    WorkerRef,
)

_CONTROL = re.compile(r"[\u0000-\u001f\u007f-\u009f]")


def _printable_bounded(value: str) -> str:
    if not value or len(value) > 256:
        raise ValueError("must be 1 to 256 characters")
    if _CONTROL.search(value):
        raise ValueError("must not contain control characters")
    return value


PrintableText = Annotated[str, AfterValidator(_printable_bounded)]
Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Redaction = Literal["public", "internal", "confidential", "restricted"]


class ArtifactProducer(ContractModel):
    node: NodeName
    worker: WorkerRef


class ArtifactLineage(ContractModel):
    generation: NonNegativeInteger
    run_id: str
    attempt: PositiveInteger


class ArtifactRef(ContractModel):
    """A reference to produced bytes, never the bytes (or a signed URL) themselves."""

    artifact_id: PrintableText
    sha256: Sha256Hex
    byte_length: Annotated[NonNegativeInteger, Field(le=MAX_SAFE_INTEGER)]
    media_type: PrintableText
    type_id: StableRef
    producer: ArtifactProducer
    lineage: ArtifactLineage
    redaction: Redaction


ErrorCode = Literal["timeout", "crash", "malformed", "refusal"]
FailureReason = Literal[
    "declared_failure",
    "policy_denied",
    "interactive_input_required",
    "authentication_required",
    "malformed_result",
]
_REFUSAL_REASONS = {"policy_denied", "interactive_input_required", "authentication_required"}


class VerifiedOutcome(ContractModel):
    """A step (or data worker) finished and returned ``output``."""

    status: Literal["verified"]
    output: Any
    artifacts: list[ArtifactRef] = Field(default_factory=list)


class VerifierOutcome(ContractModel):
    """A verifier answered: its output, one label per declared signal, and a diagnostic."""

    status: Literal["verifier"]
    output: Any
    signals: dict[FieldName, EnumLabel]
    diagnostic: Any
    artifacts: list[ArtifactRef] = Field(default_factory=list)


class ErrorOutcome(ContractModel):
    """The execution failed; ``code`` routes through the graph's error controls."""

    status: Literal["error"]
    code: ErrorCode
    reason: FailureReason

    @model_validator(mode="after")
    def _reason_fits_code(self) -> ErrorOutcome:
        if self.reason == "declared_failure":
            return self
        if self.code == "refusal" and self.reason in _REFUSAL_REASONS:
            return self
        if self.code == "malformed" and self.reason == "malformed_result":
            return self
        raise ValueError(f"reason {self.reason!r} cannot accompany error code {self.code!r}")


WorkerOutcome = Annotated[
    VerifiedOutcome | VerifierOutcome | ErrorOutcome, Field(discriminator="status")
]


def error(code: ErrorCode, reason: FailureReason = "declared_failure") -> ErrorOutcome:
    """Shorthand used by harnesses and the engine."""
    return ErrorOutcome(status="error", code=code, reason=reason)
