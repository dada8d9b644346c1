"""Declared environment values reach the worker and never the ledger: not in any event,
not in the SQLite file or its WAL, and log lines show ``<redacted>``."""

from __future__ import annotations

import uuid
from pathlib import Path

import engine_graphs as g
import pytest
from engine_support import finish, make_workspace, wire

from zeroshot_kernel.ledger.events import NodeCompleted

# slow: a detached controller and worker processes
pytestmark = pytest.mark.slow


def test_a_declared_secret_is_used_but_never_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"zs-{uuid.uuid4().hex}"
    monkeypatch.setenv("ZS_TEST_SECRET", secret)
    ws = make_workspace(tmp_path)
    graph, runtime = g.single_step_graph("leak", env=["ZS_TEST_SECRET"])
    work = graph["root"]["children"][0]
    work["output"] = g.rec(value=g.INT, echo=g.STR)
    run = ws.submit((graph, runtime), {"value": 7})

    # The worker had the value (it echoed it), and what was recorded is redacted.
    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 7}}
    [completed] = [e for _, e in run.events() if isinstance(e, NodeCompleted)]
    assert completed.completion.outcome.output == {"value": 7, "echo": "secret=<redacted>"}
    lines = sorted(log.line for _, log in run.logs())
    assert lines == ["stderr also has <redacted>", "the secret is <redacted>"]

    assert ws.client.ledger.admitted(run.id)["runtime"]["nodes"]["work"]["env"] == [
        "ZS_TEST_SECRET"
    ]

    # The database file and its write-ahead log (read while this client keeps it open).
    files = [p for p in ws.ledger_path.parent.iterdir() if p.name.startswith("ledger.db")]
    assert {p.name for p in files} >= {"ledger.db", "ledger.db-wal"}
    stored = b"".join(path.read_bytes() for path in files)
    assert b"<redacted>" in stored
    assert secret.encode() not in stored
    controller_log = ws.root / ".zeroshot" / "controllers" / f"{run.id}.log"
    assert secret not in controller_log.read_text()
