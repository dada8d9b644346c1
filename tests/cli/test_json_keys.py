"""One key style for every ``--json`` output: camelCase, as the graph contract writes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# slow: real runs and a zeroshot process per command
pytestmark = pytest.mark.slow

ZEROSHOT = [sys.executable, "-m", "zeroshot_kernel"]
# Keys whose values are user data (names a task or a worker chose), not output structure.
DATA = {
    "output",
    "input",
    "initialInput",
    "parameters",
    "params",
    "signals",
    "values",
    "results",
    "state",
    "metrics",
    "edits",
    "files",
    "diagnostic",
    "graph",
    "runtime",
}


def _zeroshot(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROSHOT_")}
    return subprocess.run(
        [*ZEROSHOT, *args], cwd=root, capture_output=True, text=True, timeout=300, env=env
    )


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A workspace holding one finished embedded auto-research run (one round)."""
    root = tmp_path_factory.mktemp("json-keys")
    (root / ".zeroshot").mkdir()
    ran = _zeroshot(root, "research", "run", "branin", "--iterations", "1")
    assert ran.returncode == 0, ran.stderr
    listed = json.loads(_zeroshot(root, "list", "--json").stdout)
    return root, listed[0]["runId"]


def _structure_keys(value: Any, path: str = "") -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append(f"{path}/{key}")
            if key not in DATA:
                found += _structure_keys(item, f"{path}/{key}")
    elif isinstance(value, list):
        for item in value:
            found += _structure_keys(item, f"{path}[]")
    return found


@pytest.mark.parametrize(
    "command",
    [
        "list",
        "status RUN",
        "logs RUN",
        "research show RUN",
        "research studies",
        "profile list",
        "target list",
        "providers",
    ],
)
def test_every_json_output_uses_camel_case_keys(finished: tuple[Path, str], command: str) -> None:
    root, run_id = finished
    shown = _zeroshot(root, *command.replace("RUN", run_id).split(), "--json")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout.strip()
    # `logs --json` prints one JSON object a line; the others one document
    documents = (
        [json.loads(line) for line in text.splitlines()]
        if command.startswith("logs")
        else [json.loads(text)]
    )
    keys = [key for document in documents for key in _structure_keys(document)]
    assert [key for key in keys if "_" in key.rsplit("/", 1)[-1]] == []
    if command != "logs RUN":
        assert keys or command in ("profile list",), "nothing was checked"
