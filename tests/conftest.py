"""Shared test fixtures: where the conformance files live, and loud skips.

A test whose real component is missing skips with the reason; under ZEROSHOT_STRICT=1
(as CI sets it) the same situation fails instead, so CI can never pass by skipping. A test
that reads the conformance files takes the ``conformance`` fixture (files are only listed at
collection, never read), so a missing directory is such a loud skip.

Fixtures shared by several files live in plugin modules (``pytest_plugins`` below) and reach
every test without an import; what tests share for processes and waiting (``alive``,
``wait_until``, atomic pid files) is in ``support.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

# Fixtures defined in helper modules reach every test without an import: ``ledger_url``,
# ``postgres_url`` and ``postgres_password_url`` (ledger_backends) and the ``ws`` workspace
# (engine_support).
pytest_plugins = ["ledger_backends", "engine_support"]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFORMANCE = PROJECT_ROOT.parent / "shared" / "conformance" / "openengine-cluster-v1"


# A test that starts PostgreSQL is slow wherever it is (``make test-fast`` leaves it out):
# every test that takes one of these fixtures; the PostgreSQL case of ``ledger_url`` is marked
# where ledger_backends.py parametrises it.
POSTGRES_FIXTURES = frozenset({"postgres_url", "postgres_password_url"})


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if POSTGRES_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def strict() -> bool:
    return os.environ.get("ZEROSHOT_STRICT", "") not in ("", "0", "false")


def require(condition: bool, reason: str) -> None:
    """Skip loudly when a real component is missing; fail instead under ZEROSHOT_STRICT=1."""
    if condition:
        return
    message = f"MISSING REAL COMPONENT: {reason}"
    if strict():
        pytest.fail(f"{message} (ZEROSHOT_STRICT=1 turns this skip into a failure)")
    pytest.skip(message)


def conformance_dir() -> Path:
    return Path(os.environ.get("ZEROSHOT_CONFORMANCE_DIR", DEFAULT_CONFORMANCE))


@pytest.fixture(scope="session")
def conformance() -> Path:
    """The reference conformance directory (ZEROSHOT_CONFORMANCE_DIR)."""
    root = conformance_dir()
    require(
        (root / "fixtures").is_dir(),
        f"conformance fixtures not found at {root}; set ZEROSHOT_CONFORMANCE_DIR",
    )
    return root


def fixture_files(subdir: str) -> list[Path]:
    """Fixture files for parametrisation; empty when the directory is missing (the
    ``conformance`` fixture then reports it loudly)."""
    root = conformance_dir() / "fixtures" / subdir
    return sorted(root.glob("*.json")) if root.is_dir() else []


def fixture_params(subdir: str) -> list[Any]:
    files = fixture_files(subdir)
    if not files:
        return [pytest.param(None, id=f"{subdir.replace('/', '-')}-missing")]
    return [pytest.param(path, id=path.stem) for path in files]


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
