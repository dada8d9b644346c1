"""``safe_log``: what a worker prints is recorded bounded, with control characters made
visible and the values behind named connections redacted, in the events and in the bytes
of the SQLite file and its write-ahead log."""

from __future__ import annotations

import uuid
from pathlib import Path

import engine_graphs as g
import pytest
from engine_support import finish, make_workspace, wire

from zeroshot_kernel.engine.redaction import OVERSIZED, REDACTED
from zeroshot_kernel.ledger.events import MAX_LOG_LINE_BYTES

# slow: a detached controller and worker processes
pytestmark = pytest.mark.slow

LONG_TAIL = "end-of-the-long-line"


def test_worker_lines_are_bounded_visible_and_free_of_connection_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "GH_TOKEN": f"ghp_{uuid.uuid4().hex}",  # the well-known ``github`` connection
        "ZS_CORP_KEY": f"corp-{uuid.uuid4().hex}",  # the plan's own ``corp`` connection
        "OPENROUTER_API_KEY": f"or-{uuid.uuid4().hex}",  # known, used by no node: not passed
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    ws = make_workspace(tmp_path)
    ws.behave(
        work={
            "lines": [
                "x" * (MAX_LOG_LINE_BYTES + 100) + LONG_TAIL,  # over the bound as printed
                "\x01" * (MAX_LOG_LINE_BYTES // 2),  # within it, but not once made visible
                "bell\x07 esc\x1b[1m cr\r del\x7f c1\x85 tab\tend",
            ],
            "print_env": list(secrets),
        }
    )
    graph, runtime = g.single_step_graph("talk", connections=["github", "corp"])
    runtime["connections"] = {"corp": {"env": "ZS_CORP_KEY"}}
    run = ws.submit((graph, runtime), {"value": 1})

    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 2}}
    assert [(log.stream, log.line) for _, log in run.logs()] == [
        ("output", OVERSIZED),
        ("output", OVERSIZED),
        ("output", "bell\\x07 esc\\x1b[1m cr\\x0d del\\x7f c1\\x85 tab\tend"),
        ("output", f"GH_TOKEN={REDACTED}"),
        ("output", f"ZS_CORP_KEY={REDACTED}"),
        ("output", "OPENROUTER_API_KEY="),  # undeclared: not in the worker's environment
    ]
    assert ws.client.ledger.admitted(run.id)["runtime"]["connections"] == {
        "corp": {"env": "ZS_CORP_KEY"}
    }

    # The raw bytes of the database and its WAL (read while this client holds it open).
    files = [p for p in ws.ledger_path.parent.iterdir() if p.name.startswith("ledger.db")]
    assert {p.name for p in files} >= {"ledger.db", "ledger.db-wal"}
    stored = b"".join(path.read_bytes() for path in files)
    assert OVERSIZED.encode() in stored and b"bell\\\\x07 esc" in stored
    assert LONG_TAIL.encode() not in stored
    for value in secrets.values():
        assert value.encode() not in stored
    controller_log = ws.root / ".zeroshot" / "controllers" / f"{run.id}.log"
    assert not any(value in controller_log.read_text() for value in secrets.values())
