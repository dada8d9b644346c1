"""Saved profiles: named submissions kept in a target's ledger database.

A profile is what ``zeroshot run`` would be given: a title, the graph (a template is
expanded when the profile is saved and its name and options kept as a note), the runtime
plan and a default input, plus the identity the graph was admitted under. Running a
profile fetches it and submits the stored graph and runtime through the same admission as
an inline graph, so a profile saved before a template changed keeps running what was saved.

Example::

    client = Client(target="shared")
    client.save_profile("nightly", "graph.json", runtime=plan, input={"task": "..."})
    run = client.submit_profile("nightly")
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from pydantic import Field
from sqlalchemy import Text
from sqlmodel import Field as ColumnField
from sqlmodel import col, select

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.contract.reading import shorten
from zeroshot_kernel.exceptions import InvalidInput, NotFound
from zeroshot_kernel.ledger.side_tables import SideStore, SideTable

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


def check_name(name: str) -> str:
    """``name`` when a profile may be saved under it, else :class:`InvalidInput` in one
    line: checked before anything is admitted or stored, since the model's own check
    reports in pydantic's several lines."""
    # fullmatch: re.match lets "$" stop before a trailing newline, which the model refuses
    if not re.fullmatch(NAME_PATTERN, name):
        raise InvalidInput(f"profile name {shorten(name, 80)!r} must match {NAME_PATTERN}")
    return name


class ProfileNotFound(NotFound):
    """No profile of that name at this target."""


class ProfileExists(InvalidInput):
    """A profile of that name is already saved (replace it explicitly)."""


class TemplateSource(ContractModel):
    """The template a profile's graph was expanded from, and the options it was given."""

    name: str
    options: dict[str, Any] = Field(default_factory=dict)


class Profile(ContractModel):
    """A saved submission (``zeroshot profile show NAME --json``)."""

    name: str = Field(pattern=NAME_PATTERN)
    title: str
    graph: dict[str, Any]
    runtime: dict[str, Any]
    input: Any = None
    """The default input; ``run --profile NAME --input ...`` replaces it."""
    identity: str
    """The graph's identity when it was saved."""
    template: TemplateSource | None = Field(default=None, exclude_if=lambda v: v is None)
    saved_at: float = 0.0

    def chosen_input(self, given: Any) -> Any:
        return self.input if given is None else given


class ProfileRow(SideTable, table=True):
    __tablename__ = "zeroshot_profiles"

    name: str = ColumnField(max_length=64, primary_key=True)
    saved_at: float
    document: str = ColumnField(sa_type=Text)


class ProfileStore(SideStore):
    """The profiles of one ledger database (a SQLAlchemy URL)."""

    schema_name = "profiles"
    tables = (ProfileRow,)
    schema_version = 1
    migrations = ()

    def save(self, profile: Profile, *, replace: bool = False) -> Profile:
        """Store ``profile``; ``ProfileExists`` when the name is taken unless ``replace``."""
        check_name(profile.name)
        saved = profile.model_copy(update={"saved_at": time.time()})
        with self._session(write=True) as session:
            row = session.get(ProfileRow, profile.name)
            if row is not None and not replace:
                raise ProfileExists(
                    f"profile {profile.name!r} is already saved at "
                    f"{self.display_url}; replace it explicitly"
                )
            if row is None:
                row = ProfileRow(name=profile.name, saved_at=0.0, document="")
            row.saved_at, row.document = saved.saved_at, json.dumps(saved.to_wire())
            session.add(row)
        return saved

    def get(self, name: str) -> Profile:
        with self._session(write=False) as session:
            row = session.get(ProfileRow, name)
            if row is None:
                known = ", ".join(p.name for p in self.list()) or "none"
                raise ProfileNotFound(
                    f"no profile {shorten(name, 80)!r} at {self.display_url} (saved: {known})"
                )
            return Profile.model_validate(json.loads(row.document))

    def list(self) -> list[Profile]:
        """Every saved profile, by name."""
        with self._session(write=False) as session:
            rows = session.exec(select(ProfileRow).order_by(col(ProfileRow.name))).all()
            return [Profile.model_validate(json.loads(row.document)) for row in rows]

    def delete(self, name: str) -> Profile:
        """Remove a profile (runs made from it keep their own admitted copy)."""
        profile = self.get(name)
        with self._session(write=True) as session:
            row = session.get(ProfileRow, name)
            if row is not None:
                session.delete(row)
        return profile
