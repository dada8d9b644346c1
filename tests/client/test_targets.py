"""Targets: ``zeroshot target add | list | remove``, ``--target`` and ``ZEROSHOT_TARGET`` on
the commands that read or write runs, and connection secrets that are never printed. Each
command is a real subprocess; the shared target is a real PostgreSQL server."""

from __future__ import annotations

import json
import sqlite3
import stat
import subprocess
from contextlib import closing
from pathlib import Path

import engine_graphs as g
import pytest
from engine_support import Workspace, finish
from sqlalchemy.engine import make_url
from support import zeroshot as run_cli

from zeroshot_kernel.client import Client
from zeroshot_kernel.targets import TargetError, Targets, resolve_ledger

# slow: a zeroshot process per command and detached controllers
pytestmark = pytest.mark.slow


def zeroshot(ws: Workspace, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(ws.root, *args, **env)


def test_runs_go_to_the_named_target_and_its_password_is_never_printed(
    ws: Workspace, postgres_password_url: str
) -> None:
    password = make_url(postgres_password_url).password
    assert password, "the test server's URL carries a password"
    added = zeroshot(ws, "target", "add", "shared", "--ledger", postgres_password_url)
    listed = zeroshot(ws, "target", "list")
    listed_json = zeroshot(ws, "target", "list", "--json")
    assert added.returncode == listed.returncode == listed_json.returncode == 0
    assert [t["name"] for t in json.loads(listed_json.stdout)] == ["local", "shared"]
    assert "* local" in listed.stdout and "  shared" in listed.stdout
    assert "***" in listed.stdout
    mode = stat.S_IMODE((ws.root / ".zeroshot" / "targets.json").stat().st_mode)
    assert mode == 0o600

    graph, runtime = g.seq_graph()
    (ws.root / "graph.json").write_text(json.dumps(graph))
    (ws.root / "plan.json").write_text(json.dumps(runtime))
    started = zeroshot(
        ws,
        "run",
        "graph.json",
        "--runtime",
        "plan.json",
        "--input",
        '{"value": 3}',
        "--detach",
        "--json",
        "--target",
        "shared",
    )
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["runId"]
    shared = Client(postgres_password_url, workspace=str(ws.root))
    finish(shared.run(run_id))
    shared.close()

    by_flag = zeroshot(ws, "status", run_id, "--target", "shared")
    by_env = zeroshot(ws, "list", ZEROSHOT_TARGET="shared")
    local = zeroshot(ws, "list")
    assert by_flag.returncode == 0 and "succeeded" in by_flag.stdout
    assert run_id in by_env.stdout and run_id not in local.stdout
    starred = zeroshot(ws, "target", "list", ZEROSHOT_TARGET="shared")
    assert "* shared" in starred.stdout
    missing = zeroshot(ws, "status", "run-aaaaaaaaaaaa", "--target", "shared")
    assert missing.returncode == 2 and "***" in missing.stderr
    removed = zeroshot(ws, "target", "remove", "shared")
    assert removed.returncode == 0 and "untouched" in removed.stdout
    gone = zeroshot(ws, "list", "--target", "shared")
    assert gone.returncode == 2 and "no target 'shared'" in gone.stderr
    for result in (
        added,
        listed,
        listed_json,
        started,
        by_flag,
        by_env,
        starred,
        missing,
        removed,
        gone,
    ):
        assert password not in result.stdout + result.stderr


def test_a_password_can_stay_in_the_environment(ws: Workspace, postgres_password_url: str) -> None:
    url = make_url(postgres_password_url)
    assert url.password is not None
    stored = postgres_password_url.replace(f":{url.password}@", ":${ZS_TEST_PGPASSWORD}@")
    refused = zeroshot(ws, "target", "add", "shared", "--ledger", stored)
    assert refused.returncode == 2 and "ZS_TEST_PGPASSWORD" in refused.stderr
    assert "shared" not in zeroshot(ws, "target", "list").stdout
    added = zeroshot(
        ws, "target", "add", "shared", "--ledger", stored, ZS_TEST_PGPASSWORD=url.password
    )
    assert added.returncode == 0, added.stderr
    assert url.password not in (ws.root / ".zeroshot" / "targets.json").read_text()
    listed = zeroshot(ws, "list", "--target", "shared", ZS_TEST_PGPASSWORD=url.password)
    assert listed.returncode == 0 and "no runs in postgresql" in listed.stdout
    assert url.password not in listed.stdout
    unset = zeroshot(ws, "list", "--target", "shared")
    assert unset.returncode == 2 and "needs the environment variable" in unset.stderr
    wrong = zeroshot(ws, "list", "--target", "shared", ZS_TEST_PGPASSWORD="wrong")
    assert wrong.returncode != 0 and "password authentication failed" in wrong.stderr


def test_bad_targets_are_refused_with_what_to_do(ws: Workspace, tmp_path: Path) -> None:
    unreachable = "postgresql://me:hunter2@127.0.0.1:9/none"
    checked = zeroshot(ws, "target", "add", "far", "--ledger", unreachable)
    assert checked.returncode == 2 and "--no-check" in checked.stderr
    assert "hunter2" not in checked.stderr + checked.stdout
    assert (
        zeroshot(ws, "target", "add", "far", "--ledger", unreachable, "--no-check").returncode == 0
    )
    again = zeroshot(ws, "target", "add", "far", "--ledger", str(tmp_path / "other.db"))
    assert again.returncode == 2 and "--replace" in again.stderr
    replaced = zeroshot(
        ws, "target", "add", "far", "--ledger", str(tmp_path / "other.db"), "--replace"
    )
    assert replaced.returncode == 0 and f"sqlite:///{tmp_path}/other.db" in replaced.stdout
    for args, message in [
        (("target", "add", "local", "--ledger", "x.db"), "cannot be redefined"),
        (("target", "add", "bad name", "--ledger", "x.db"), "must match"),
        (("target", "remove", "local"), "cannot be removed"),
        (("target", "remove", "nowhere"), "no target 'nowhere'"),
        (("list", "--target", "far", "--ledger", "x.db"), "not both"),
    ]:
        result = zeroshot(ws, *args)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)


def test_the_ledger_order_is_flag_then_environment(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Targets(ws.root).add("other", str(tmp_path / "other.db"))
    local = resolve_ledger(workspace=ws.root)
    other = f"sqlite:///{tmp_path}/other.db"
    assert local == f"sqlite:///{ws.root}/.zeroshot/ledger.db"
    assert resolve_ledger(target="other", workspace=ws.root) == other
    monkeypatch.setenv("ZEROSHOT_TARGET", "other")
    assert resolve_ledger(workspace=ws.root) == other
    assert resolve_ledger(target="local", workspace=ws.root) == local
    monkeypatch.setenv("ZEROSHOT_LEDGER", str(tmp_path / "env.db"))
    assert resolve_ledger(workspace=ws.root) == f"sqlite:///{tmp_path}/env.db"
    assert resolve_ledger(target="other", workspace=ws.root) == other
    assert (
        resolve_ledger(tmp_path / "flag.db", workspace=ws.root) == f"sqlite:///{tmp_path}/flag.db"
    )
    with pytest.raises(TargetError, match="not both"):
        resolve_ledger(tmp_path / "flag.db", "other", workspace=ws.root)
    assert Client(target="other", workspace=str(ws.root)).url == other


def test_target_add_sets_up_the_ledger_or_saves_nothing(tmp_path: Path) -> None:
    """The default check creates the ledger's tables, so a SQLite file is there at once and
    a path that cannot hold one is refused (exit 2, nothing saved) rather than failing the
    first run that uses it; --no-check still saves it unchecked."""
    folder = tmp_path / "bare"
    folder.mkdir()
    (folder / "blocker").write_text("a file, so no folder can be made under it\n")
    added = run_cli(folder, "target", "add", "t2", "--ledger", "t2.db")
    assert added.returncode == 0, added.stderr
    assert (folder / "t2.db").is_file()
    with closing(sqlite3.connect(folder / "t2.db")) as database:
        tables = {row[0] for row in database.execute("SELECT name FROM sqlite_master")}
    assert {"ledger_meta", "ledger_runs", "ledger_events"} <= tables, tables
    listed = run_cli(folder, "list", "--target", "t2")
    assert listed.returncode == 0 and "no runs in" in listed.stdout

    unusable = str(folder / "blocker" / "x" / "y.db")
    refused = run_cli(folder, "target", "add", "p", "--ledger", unusable)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    [line] = refused.stderr.splitlines()
    assert "cannot be opened or created" in line and "--no-check" in line, line
    assert "  p " not in run_cli(folder, "target", "list").stdout
    unchecked = run_cli(folder, "target", "add", "p", "--ledger", unusable, "--no-check")
    assert unchecked.returncode == 0 and "  p " in run_cli(folder, "target", "list").stdout

    newline = run_cli(folder, "target", "add", "t\n", "--ledger", "t3.db")
    assert newline.returncode == 2 and newline.stderr.startswith("error: target name 't\\n'")
    assert not (folder / "t3.db").exists()
