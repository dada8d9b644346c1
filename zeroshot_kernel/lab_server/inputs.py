"""Checks on what a request names (hostile input expected): bounded, validated with the
same rules the CLI uses, and refused with a 400 before anything touches the disk."""

from __future__ import annotations

import re

from zeroshot_kernel.auto_research.studies.catalog import StudyError, check_study_name
from zeroshot_kernel.contract.values import IDENTIFIER_PATTERN, MAX_IDENTIFIER_LENGTH
from zeroshot_kernel.exceptions import InvalidInput


class BadInput(InvalidInput):
    """A path parameter or query argument that cannot name anything (HTTP 400)."""


MAX_PARAM_CHARS = 256
"""Longer path parameters are refused before they are shown or looked at."""
MAX_WORKSPACE_CHARS = 4096
_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)
_CANDIDATE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def shown(value: str, limit: int = 64) -> str:
    """``value`` cut for an error message (never echo a megabyte back)."""
    return value if len(value) <= limit else value[:limit] + "…"


def run_id(value: str) -> str:
    """A run id as the ledger makes them (an identifier: ``run-abcdefghijkl``)."""
    if len(value) > MAX_IDENTIFIER_LENGTH or not _IDENTIFIER.match(value):
        raise BadInput(f"not a run id: {shown(value)!r}")
    return value


def study_name(value: str) -> str:
    """A study name, by the rule ``zeroshot research --study`` applies."""
    if len(value) > MAX_PARAM_CHARS:
        raise BadInput(f"not a study name: {shown(value)!r}")
    try:
        return check_study_name(value)
    except StudyError as problem:
        raise BadInput(str(problem)) from None


def candidate_id(value: str) -> str:
    """A candidate id (``c004``): a safe single folder name."""
    if len(value) > MAX_IDENTIFIER_LENGTH or not _CANDIDATE.match(value):
        raise BadInput(f"not a candidate id: {shown(value)!r}")
    return value
