"""The ledger's DDL, compiled for SQLite and PostgreSQL, is exactly what the checked-in
fixture for the current schema version records: a change to ``tables.py`` that alters the
schema without bumping ``SCHEMA_VERSION`` (and adding a migration) fails here.

After a deliberate schema change, bump the version, add the migration, and write the new
fixture with ``python tests/ledger/test_ledger_tables_ddl.py``.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.schema import CreateIndex, CreateTable

from zeroshot_kernel.ledger.tables import SCHEMA_VERSION, LedgerTable

FIXTURES = Path(__file__).parents[1] / "fixtures"
DIALECTS: dict[str, Dialect] = {"sqlite": sqlite.dialect(), "postgresql": postgresql.dialect()}


def expected_path() -> Path:
    return FIXTURES / f"ledger_ddl_v{SCHEMA_VERSION}.sql"


def ledger_ddl() -> str:
    """Every table and index of the ledger, in creation order, for each dialect."""
    lines = [f"-- ledger schema version {SCHEMA_VERSION}"]
    for name, dialect in DIALECTS.items():
        lines.append(f"-- dialect: {name}")
        for table in LedgerTable.metadata.sorted_tables:
            lines.append(str(CreateTable(table).compile(dialect=dialect)).strip() + ";")
            for index in sorted(table.indexes, key=lambda index: str(index.name)):
                lines.append(str(CreateIndex(index).compile(dialect=dialect)).strip() + ";")
            lines.append("")
    # Compiled DDL ends some lines with a space; strip them so editors leave the file alone.
    return "\n".join(line.rstrip() for line in "\n".join(lines).splitlines()) + "\n"


def test_the_ddl_is_the_one_recorded_for_the_schema_version() -> None:
    path = expected_path()
    assert path.exists(), f"no DDL recorded for schema version {SCHEMA_VERSION}: write {path}"
    assert ledger_ddl() == path.read_text(encoding="utf-8"), (
        f"the ledger's DDL differs from {path.name}: a schema change needs a SCHEMA_VERSION "
        "bump, a migration in schema.py and a new fixture"
    )


if __name__ == "__main__":
    expected_path().write_text(ledger_ddl(), encoding="utf-8")
    print(f"wrote {expected_path()}")
