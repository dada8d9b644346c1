"""The databases the ledger tests run against, as one ``ledger_url`` fixture.

Every ledger test takes ``ledger_url`` and opens its own ``Ledger`` on it, so adding a
backend is adding a parameter here: a PostgreSQL one will yield the URL of a fresh, empty
database (and drop it afterwards). Today the only backend is a SQLite file in tmp_path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

BACKENDS = [pytest.param("sqlite", id="sqlite")]


@pytest.fixture(params=BACKENDS)
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A SQLAlchemy URL of an empty ledger database for one test."""
    assert request.param == "sqlite"
    return f"sqlite:///{tmp_path / 'ledger.db'}"
