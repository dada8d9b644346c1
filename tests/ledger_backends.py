"""The databases the ledger tests run against, as one ``ledger_url`` fixture.

Every ledger test takes ``ledger_url`` and opens its own ``Ledger`` on it, so adding a
backend is adding a parameter here. ``sqlite`` is a file in tmp_path; ``postgresql`` is a
fresh, empty database on the PostgreSQL server this test process started for itself
(``postgres_server``), dropped afterwards. Where no PostgreSQL can be started, its tests
skip loudly (fail under ZEROSHOT_STRICT=1).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import postgres_server
import pytest
from conftest import require

# The PostgreSQL case starts a server: `make test-fast` (-m "not slow") runs the SQLite one.
BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.slow),
]


@pytest.fixture(params=BACKENDS)
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A SQLAlchemy URL of an empty ledger database for one test."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ledger.db'}"
        return
    assert request.param == "postgresql"
    yield from _postgres_database(request)


@pytest.fixture
def postgres_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a fresh, empty PostgreSQL database for one test (PostgreSQL only)."""
    yield from _postgres_database(request)


@pytest.fixture
def postgres_password_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """Like ``postgres_url``, but the server checks the password the URL carries."""
    with _server(request).password_database() as url:
        yield url


def _postgres_database(request: pytest.FixtureRequest) -> Iterator[str]:
    with _server(request).database() as url:
        yield url


def _server(request: pytest.FixtureRequest) -> postgres_server.PostgresServer:
    reason = postgres_server.missing_reason()
    require(reason is None, f"no PostgreSQL for the ledger tests: {reason}")
    # Stopped at the end of the session (atexit and a watchdog cover other endings).
    return postgres_server.shared_server(request.config.add_cleanup)
