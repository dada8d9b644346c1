"""The base every contract model shares: camelCase on the wire, unknown fields rejected."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class ContractModel(BaseModel):
    """Strict, immutable, camelCase wire model; unknown fields are an error at every level."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready form, exactly as the reference writes it."""
        return self.model_dump(mode="json", by_alias=True)

    @classmethod
    def from_wire(cls, document: Any) -> Self:
        """Parse a JSON-ready document; raises ``pydantic.ValidationError`` on bad input."""
        return cls.model_validate(document)
