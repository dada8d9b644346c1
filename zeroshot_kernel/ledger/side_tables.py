"""Tables a feature keeps beside the ledger's own, in the same database.

Batches and saved profiles live where their runs live, so they are seen wherever the
ledger is: on a workspace's SQLite file or a shared PostgreSQL. Each feature declares its
tables on its own SQLModel metadata and subclasses :class:`SideStore`, which creates them on
first use and hands out sessions with the ledger's concurrency settings (WAL, busy timeout,
writes that take the lock up front).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar, Self

from sqlalchemy import MetaData
from sqlmodel import Session

from zeroshot_kernel.ledger.dialects import lock_schema, open_engines
from zeroshot_kernel.workspace import display_url


class SideStore:
    """The tables of ``metadata`` in the database at ``url`` (a SQLAlchemy URL)."""

    metadata: ClassVar[MetaData]

    def __init__(self, url: str) -> None:
        self.url = url
        self._engines = open_engines(url)
        with self._session(write=True) as session:
            lock_schema(session)
            self.metadata.create_all(session.connection())

    @property
    def display_url(self) -> str:
        """The URL with any password hidden."""
        return display_url(self.url)

    def close(self) -> None:
        self._engines.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextmanager
    def _session(self, *, write: bool) -> Iterator[Session]:
        engine = self._engines.write if write else self._engines.read
        with Session(engine, expire_on_commit=False) as session, session.begin():
            yield session
