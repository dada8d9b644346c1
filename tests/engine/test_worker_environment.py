"""What a python worker process gets of the controller's environment, and what of it can
reach the ledger: an allow-list plus the names its node declares (for that call only); any
value of the controller's environment that looks like a secret (``*TOKEN*``, ``*SECRET*``,
``*PASSWORD*``, ``*KEY*``, a URL's password) is redacted wherever a worker puts it, even one
it found another way; a URL given where a name was expected is echoed without its password."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import engine_graphs as g
import pytest
from engine_support import finish, make_workspace, wire
from harness_support import controller_logs, ledger_bytes

from zeroshot_kernel.engine.redaction import REDACTED
from zeroshot_kernel.ledger.events import NodeCompleted

# slow: detached controllers and worker processes
pytestmark = pytest.mark.slow

LEAKY_WORKER = """
from pathlib import Path

def leak(value, context):
    secrets = Path(context.workspace, "found-elsewhere.txt").read_text().split()
    for secret in secrets:
        print("found", secret)
    raise RuntimeError("leaking " + " ".join(secrets))
"""


def plant_secrets(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Secrets in the controller's environment that no node declares."""
    planted = {
        "AWS_SECRET_ACCESS_KEY": f"aws-{uuid.uuid4().hex}",
        "MY_PASSWORD": f"pw-{uuid.uuid4().hex}",
        "GH_TOKEN": f"ghp_{uuid.uuid4().hex}",
        "DATABASE_URL": f"postgresql://app:db-{uuid.uuid4().hex}@db.internal/app",
    }
    for name, value in planted.items():
        monkeypatch.setenv(name, value)
    return planted


def test_an_undeclared_secret_is_not_in_a_workers_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = plant_secrets(monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    ws.behave(work={"print_env": [*planted, "PATH"]})
    run = ws.submit(g.single_step_graph("talk"), {"value": 1})
    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 2}}
    printed = {log.line for _, log in run.logs()}
    for name in planted:
        assert f"{name}=" in printed  # printed, and empty: never in its environment
    assert any(line.startswith("PATH=/") for line in printed)  # the allow-list is there


def test_a_secret_a_worker_finds_elsewhere_is_redacted_in_the_ledger_and_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = plant_secrets(monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    (ws.root / "leaky.py").write_text(LEAKY_WORKER)
    password = planted["DATABASE_URL"].split(":")[2].split("@")[0]
    found = [planted["AWS_SECRET_ACCESS_KEY"], planted["MY_PASSWORD"], planted["GH_TOKEN"]]
    (ws.root / "found-elsewhere.txt").write_text(" ".join([*found, password]))
    graph, plan = g.single_step_graph("talk")
    plan["nodes"]["work"]["callable"] = "leaky:leak"
    run = ws.submit((graph, plan), {"value": 1})
    finish(run)
    [crashed] = [e for _, e in run.events() if isinstance(e, NodeCompleted)]
    assert crashed.detail is not None and f"leaking {REDACTED}" in crashed.detail
    lines = [log.line for _, log in run.logs()]
    assert lines and all(line == f"found {REDACTED}" for line in lines)
    stored = ledger_bytes(ws)
    for value in [*found, password]:
        assert value.encode() not in stored
        assert value not in controller_logs(ws)


def test_a_url_given_where_a_name_is_expected_is_echoed_without_its_password(
    tmp_path: Path,
) -> None:
    secret = f"pw{uuid.uuid4().hex}"
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "zeroshot_kernel",
            "list",
            "--target",
            f"postgresql://u:{secret}@h/db",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 2 and "postgresql://u:***@h/db" in ran.stderr
    assert secret not in ran.stdout + ran.stderr
