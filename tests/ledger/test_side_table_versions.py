"""The side tables (batches, profiles) carry schema versions like the ledger's own: a fresh
database gets them at the current version, an older or unversioned one is migrated forward
with its rows intact, once even when two processes open it at once, and one from a newer
zeroshot is refused before anything is touched. On SQLite and on a real PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy
from sqlalchemy import text
from sqlmodel import Field, Session

from zeroshot_kernel.batch import BatchStore
from zeroshot_kernel.batch.storage import BatchOptions
from zeroshot_kernel.ledger import Ledger, LedgerVersionError
from zeroshot_kernel.ledger.side_tables import SideStore, SideTable
from zeroshot_kernel.profiles import Profile, ProfileStore

# The tables as zeroshot created them before side tables recorded a version (version 1).
UNVERSIONED_DDL = [
    "CREATE TABLE zeroshot_batches (batch_id VARCHAR(64) NOT NULL, notebook TEXT NOT NULL, "
    "output_dir TEXT NOT NULL, options_json TEXT NOT NULL, created_at FLOAT NOT NULL, "
    "PRIMARY KEY (batch_id))",
    "CREATE INDEX ix_zeroshot_batches_created_at ON zeroshot_batches (created_at)",
    'CREATE TABLE zeroshot_batch_items (batch_id VARCHAR(64) NOT NULL, "index" INTEGER NOT '
    "NULL, parameters_json TEXT NOT NULL, status VARCHAR(16) NOT NULL, attempts INTEGER NOT "
    "NULL, started_at FLOAT, duration_s FLOAT, output TEXT, error TEXT, results_json TEXT, "
    'PRIMARY KEY (batch_id, "index"))',
    "CREATE TABLE zeroshot_profiles (name VARCHAR(64) NOT NULL, saved_at FLOAT NOT NULL, "
    "document TEXT NOT NULL, PRIMARY KEY (name))",
    "CREATE TABLE zeroshot_probe (name VARCHAR(64) NOT NULL PRIMARY KEY, size INTEGER)",
]
PROFILE = Profile(
    name="nightly", title="kept", graph={"profile": "x"}, runtime={}, identity="0" * 64
)
OLD_ROWS = [
    "INSERT INTO zeroshot_batches VALUES ('batch-old', 'n.ipynb', 'out', "
    "'{\"start_retries\": 3}', 1700000000.0)",
    'INSERT INTO zeroshot_batch_items (batch_id, "index", parameters_json, status, attempts, '
    "duration_s, output, results_json) VALUES ('batch-old', 0, '{\"x\": 1}', 'succeeded', 1, "
    "2.5, 'out/0.ipynb', '{\"score\": 0.9}')",
    'INSERT INTO zeroshot_batch_items (batch_id, "index", parameters_json, status, attempts) '
    "VALUES ('batch-old', 1, '{\"x\": 2}', 'pending', 0)",
    "INSERT INTO zeroshot_profiles VALUES ('nightly', 1700000000.0, "
    f"'{json.dumps(PROFILE.to_wire())}')",
    "INSERT INTO zeroshot_probe VALUES ('a', 3), ('b', NULL)",
]


# -- a store whose schema moved twice, to exercise the migration steps -----------------------


class ProbeRow(SideTable, table=True):
    """Version 3 of a probe table: version 2 added ``label``, version 3 made ``size`` a
    ``weight`` (the size doubled) and moved the migration count into its own table."""

    __tablename__ = "zeroshot_probe"

    name: str = Field(max_length=64, primary_key=True)
    size: int | None = None
    label: str = Field(default="", max_length=32)
    weight: int | None = None


class ProbeMigrationRow(SideTable, table=True):
    __tablename__ = "zeroshot_probe_migrations"

    step: str = Field(max_length=32, primary_key=True)


def _to_3(session: Session) -> None:
    session.execute(text("ALTER TABLE zeroshot_probe ADD COLUMN weight INTEGER"))
    session.execute(text("UPDATE zeroshot_probe SET weight = size * 2"))
    SideTable.metadata.tables["zeroshot_probe_migrations"].create(session.connection())
    session.add(ProbeMigrationRow(step="2->3"))


class ProbeStore(SideStore):
    schema_name = "probe"
    tables = (ProbeRow, ProbeMigrationRow)
    schema_version = 3
    migrations = (
        "ALTER TABLE zeroshot_probe ADD COLUMN label VARCHAR(32) NOT NULL DEFAULT 'old'",
        _to_3,
    )


class BrokenProbeStore(ProbeStore):
    """Its last step fails after the others ran: nothing of the migration may stay."""

    migrations = (ProbeStore.migrations[0], lambda session: _fail(session))


def _fail(session: Session) -> None:
    session.execute(text("ALTER TABLE zeroshot_probe ADD COLUMN weight INTEGER"))
    raise RuntimeError("migration step failed")


# -- helpers ---------------------------------------------------------------------------------


@pytest.fixture
def admin(ledger_url: str) -> Iterator[sqlalchemy.Engine]:
    """A plain engine on the test database, for what the stores do not do."""
    engine = sqlalchemy.create_engine(ledger_url)
    yield engine
    engine.dispose()


def _old_database(admin: sqlalchemy.Engine) -> None:
    with admin.begin() as connection:
        for statement in [*UNVERSIONED_DDL, *OLD_ROWS]:
            connection.execute(text(statement))


def _versions(admin: sqlalchemy.Engine) -> dict[str, int]:
    with admin.connect() as connection:
        rows = connection.execute(text("SELECT store, version FROM zeroshot_schema_versions"))
        return {store: version for store, version in rows}


def _set_version(admin: sqlalchemy.Engine, store: str, version: int) -> None:
    with admin.begin() as connection:
        connection.execute(
            text("UPDATE zeroshot_schema_versions SET version = :v WHERE store = :s"),
            {"v": version, "s": store},
        )


def _columns(admin: sqlalchemy.Engine, table: str) -> set[str]:
    return {column["name"] for column in sqlalchemy.inspect(admin).get_columns(table)}


# -- tests -----------------------------------------------------------------------------------


def test_a_fresh_database_gets_every_side_table_at_its_current_version(
    ledger_url: str, admin: sqlalchemy.Engine
) -> None:
    with (
        Ledger(ledger_url),
        BatchStore(ledger_url) as batches,
        ProfileStore(ledger_url) as profiles,
        ProbeStore(ledger_url),
    ):
        batch_id = batches.create("n.ipynb", "out", [{"x": 1}], BatchOptions())
        profiles.save(PROFILE)
    assert _versions(admin) == {"batches": 1, "profiles": 1, "probe": 3}
    assert {"weight", "label"} <= _columns(admin, "zeroshot_probe")
    # Opening again changes nothing and keeps what was written.
    with BatchStore(ledger_url) as batches, ProfileStore(ledger_url) as profiles:
        assert batches.status(batch_id).count("pending") == 1
        assert profiles.get("nightly").title == "kept"
    assert _versions(admin) == {"batches": 1, "profiles": 1, "probe": 3}


def test_an_unversioned_database_is_migrated_forward_with_its_rows_intact(
    ledger_url: str, admin: sqlalchemy.Engine
) -> None:
    _old_database(admin)
    with (
        BatchStore(ledger_url) as batches,
        ProfileStore(ledger_url) as profiles,
        ProbeStore(ledger_url),
    ):
        old = batches.status("batch-old")
        assert [(i.index, i.status, i.parameters, i.results) for i in old.items] == [
            (0, "succeeded", {"x": 1}, {"score": 0.9}),
            (1, "pending", {"x": 2}, None),
        ]
        assert old.notebook == "n.ipynb" and old.items[0].output == "out/0.ipynb"
        assert profiles.get("nightly") == PROFILE
        # and they go on working as before
        batches.start("batch-old", 1)
        assert batches.status("batch-old").items[1].status == "running"
        profiles.save(PROFILE.model_copy(update={"name": "second"}))
        assert [p.name for p in profiles.list()] == ["nightly", "second"]
    assert _versions(admin) == {"batches": 1, "profiles": 1, "probe": 3}
    with admin.connect() as connection:
        probe = connection.execute(
            text("SELECT name, size, label, weight FROM zeroshot_probe ORDER BY name")
        ).all()
        steps = connection.execute(text("SELECT step FROM zeroshot_probe_migrations")).all()
    assert [tuple(row) for row in probe] == [("a", 3, "old", 6), ("b", None, "old", None)]
    assert [tuple(row) for row in steps] == [("2->3",)]


def test_an_older_recorded_version_runs_only_the_steps_after_it(
    ledger_url: str, admin: sqlalchemy.Engine
) -> None:
    _old_database(admin)
    with admin.begin() as connection:
        connection.execute(
            text("ALTER TABLE zeroshot_probe ADD COLUMN label VARCHAR(32) NOT NULL DEFAULT 'v2'")
        )
        connection.execute(
            text(
                "CREATE TABLE zeroshot_schema_versions (store VARCHAR(64) "
                "PRIMARY KEY, version INTEGER NOT NULL)"
            )
        )
        connection.execute(text("INSERT INTO zeroshot_schema_versions VALUES ('probe', 2)"))
    ProbeStore(ledger_url).close()
    with admin.connect() as connection:
        labels = connection.execute(
            text("SELECT label, weight FROM zeroshot_probe ORDER BY name")
        ).all()
    assert [tuple(row) for row in labels] == [("v2", 6), ("v2", None)]
    assert _versions(admin) == {"probe": 3}


def test_a_failing_migration_leaves_the_database_as_it_was(
    ledger_url: str, admin: sqlalchemy.Engine
) -> None:
    _old_database(admin)
    with pytest.raises(RuntimeError, match="migration step failed"):
        BrokenProbeStore(ledger_url)
    assert _columns(admin, "zeroshot_probe") == {"name", "size"}
    assert "zeroshot_probe_migrations" not in sqlalchemy.inspect(admin).get_table_names()
    ProbeStore(ledger_url).close()  # the fixed code migrates it
    assert _versions(admin)["probe"] == 3


@pytest.mark.parametrize("store", [BatchStore, ProfileStore])
def test_tables_from_a_newer_zeroshot_are_refused_before_anything_is_touched(
    ledger_url: str, admin: sqlalchemy.Engine, store: type[SideStore]
) -> None:
    with BatchStore(ledger_url) as batches, ProfileStore(ledger_url) as profiles:
        batch_id = batches.create("n.ipynb", "out", [{"x": 1}], BatchOptions())
        profiles.save(PROFILE)
    _set_version(admin, store.schema_name, 2)
    dropped = store.tables[-1].__tablename__  # as if the newer schema had no such table
    with admin.begin() as connection:
        connection.execute(text(f"DROP TABLE {dropped}"))

    with pytest.raises(LedgerVersionError) as refused:
        store(ledger_url)
    message = str(refused.value)
    assert f"the {store.schema_name} tables of this ledger" in message
    assert "schema version 2" in message and "up to 1" in message
    assert "upgrade zeroshot" in message
    assert _versions(admin)[store.schema_name] == 2
    assert dropped not in sqlalchemy.inspect(admin).get_table_names()
    # Each family of tables has its own version: the other store still opens.
    other = ProfileStore if store is BatchStore else BatchStore
    other(ledger_url).close()
    _set_version(admin, store.schema_name, 0)
    with pytest.raises(LedgerVersionError, match=r"record schema version 0, .* cannot read"):
        store(ledger_url)
    assert batch_id


OPENER = textwrap.dedent("""\
    import sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[3])
    import test_side_table_versions as t
    url, signals = sys.argv[1], Path(sys.argv[2])
    def wait_for_both(session):
        deadline = time.monotonic() + 60
        while len(list(signals.glob("opening-*"))) < 2:
            assert time.monotonic() < deadline, "the other process never tried to open"
            time.sleep(0.01)
        t._to_3(session)
    t.ProbeStore.migrations = (t.ProbeStore.migrations[0], wait_for_both)
    (signals / f"opening-{sys.argv[4]}").touch()
    with t.ProbeStore(url), t.BatchStore(url) as batches, t.ProfileStore(url) as profiles:
        batch_id = batches.create("n.ipynb", "out", [{"x": 1}], t.BatchOptions())
        profiles.save(t.PROFILE.model_copy(update={"name": f"p{sys.argv[4]}"}))
        print(batches.status("batch-old").count("pending"), batches.status(batch_id).batch_id)
""")


@pytest.mark.slow  # two processes racing a migration
def test_two_processes_opening_an_old_database_at_once_migrate_it_once(
    ledger_url: str, admin: sqlalchemy.Engine, tmp_path: Path
) -> None:
    """Each process signals before it opens; whichever migrates first holds the schema lock
    until the other has signalled, so the second tries to open while the first migrates."""
    _old_database(admin)
    signals = tmp_path / "signals"
    signals.mkdir()
    here = str(Path(__file__).parent)
    openers = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, ledger_url, str(signals), here, str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    outputs = [opener.communicate(timeout=120) for opener in openers]
    for opener, (out, err) in zip(openers, outputs, strict=True):
        assert opener.returncode == 0, err[-3000:]
        assert out.split()[0] == "1"  # the old batch's one pending item, read after migrating
    assert _versions(admin) == {"batches": 1, "profiles": 1, "probe": 3}
    with admin.connect() as connection:
        steps = connection.execute(text("SELECT step FROM zeroshot_probe_migrations")).all()
        weights = (
            connection.execute(text("SELECT weight FROM zeroshot_probe ORDER BY name"))
            .scalars()
            .all()
        )
    assert [tuple(row) for row in steps] == [("2->3",)]  # migrated once
    assert weights == [6, None]  # not doubled twice
    with BatchStore(ledger_url) as batches, ProfileStore(ledger_url) as profiles:
        assert len(batches.batches()) == 3
        assert [p.name for p in profiles.list()] == ["nightly", "p0", "p1"]
