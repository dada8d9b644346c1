"""Tables a feature keeps beside the ledger's own, in the same database, and their versions.

Batches and saved profiles live where their runs live, so they are seen wherever the
ledger is: on a workspace's SQLite file or a shared PostgreSQL. Each feature declares its
tables on :class:`SideTable` (one SQLModel metadata for every side table, apart from the
ledger's) and subclasses :class:`SideStore`, naming its tables, its schema version and the
forward migrations to it. Opening a store hands out sessions with the ledger's concurrency
settings (WAL, busy timeout, writes that take the lock up front) after settling the schema
the way the ledger settles its own (``ledger.schema``):

- a fresh database gets the store's tables at the current version;
- an older one (or one whose tables predate recorded versions, which counts as version 1)
  is migrated forward, every step in the opening transaction, under the schema lock, so
  two processes opening it at once migrate it once;
- one written by a newer version is refused with :class:`LedgerVersionError` before
  anything is touched.

Versions are kept per store in ``zeroshot_schema_versions`` (store name -> version).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import ClassVar, Self

from sqlalchemy import Table, inspect, text
from sqlalchemy.orm import registry
from sqlmodel import Field, Session, SQLModel

from zeroshot_kernel.ledger.dialects import lock_schema, open_engines
from zeroshot_kernel.ledger.errors import LedgerVersionError
from zeroshot_kernel.workspace import display_url

Migration = Callable[[Session], None] | str
"""One forward step: a function given the opening session, or one SQL statement."""
UNVERSIONED = 1
"""The version of side tables created before their versions were recorded."""


class SideTable(SQLModel, registry=registry()):
    """Base of every side table: one metadata, apart from the ledger's."""


class SchemaVersionRow(SideTable, table=True):
    """The schema version of one side store's tables."""

    __tablename__ = "zeroshot_schema_versions"

    store: str = Field(max_length=64, primary_key=True)
    version: int


class SideStore:
    """The tables of one feature in the database at ``url`` (a SQLAlchemy URL).

    Subclasses set ``schema_name`` (the key of their version), ``tables`` (their table
    classes), ``schema_version`` and ``migrations``: ``migrations[n - 1]`` takes the tables
    from version ``n`` to ``n + 1``, so there are ``schema_version - 1`` of them. A
    migration changes what exists; tables new in the current version are created after the
    migrations ran.
    """

    schema_name: ClassVar[str]
    tables: ClassVar[Sequence[type[SideTable]]]
    schema_version: ClassVar[int] = 1
    migrations: ClassVar[Sequence[Migration]] = ()

    def __init__(self, url: str) -> None:
        self.url = url
        self._engines = open_engines(url)
        try:
            with self._session(write=True) as session:
                self._ensure_schema(session)
        except BaseException:
            self._engines.dispose()
            raise

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

    # -- schema ---------------------------------------------------------------------------

    @classmethod
    def _ensure_schema(cls, session: Session) -> None:
        """Create, migrate or refuse this store's tables, in the caller's transaction."""
        if len(cls.migrations) != cls.schema_version - 1:
            raise TypeError(
                f"{cls.__name__} declares schema version {cls.schema_version} "
                f"but {len(cls.migrations)} migrations"
            )
        lock_schema(session)
        connection = session.connection()
        _table(SchemaVersionRow).create(connection, checkfirst=True)
        row = session.get(SchemaVersionRow, cls.schema_name)
        tables = [_table(table) for table in cls.tables]
        if row is None:
            existing = set(inspect(connection).get_table_names())
            found = UNVERSIONED if any(t.name in existing for t in tables) else None
        else:
            found = cls._check_version(row.version)
        if found is not None:
            for step in cls.migrations[found - 1 :]:
                if isinstance(step, str):
                    session.execute(text(step))
                else:
                    step(session)
            session.flush()
        SideTable.metadata.create_all(connection, tables=tables)
        if row is None:
            session.add(SchemaVersionRow(store=cls.schema_name, version=cls.schema_version))
        else:
            row.version = cls.schema_version

    @classmethod
    def _check_version(cls, version: int) -> int:
        if UNVERSIONED <= version <= cls.schema_version:
            return version
        if version > cls.schema_version:
            raise LedgerVersionError(
                f"the {cls.schema_name} tables of this ledger were written with schema "
                f"version {version}, but this zeroshot knows versions up to "
                f"{cls.schema_version}; upgrade zeroshot to open them"
            )
        raise LedgerVersionError(
            f"the {cls.schema_name} tables of this ledger record schema version {version}, "
            f"which this zeroshot (schema version {cls.schema_version}) cannot read"
        )


def _table(model: type[SQLModel]) -> Table:
    table = model.__table__  # type: ignore[attr-defined]
    assert isinstance(table, Table)
    return table
