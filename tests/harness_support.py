"""Helpers for the LLM-harness tests: stand-in agent CLIs on disk, scripted replies, and
small graphs whose nodes carry instructions (as the LLM harnesses require)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import engine_graphs as g
import pytest
from engine_support import Workspace
from support import read_pid_file

STANDINS = Path(__file__).with_name("agent_standins")
BIN_ENV = {"claude": "ZEROSHOT_CLAUDE_BIN", "codex": "ZEROSHOT_CODEX_BIN"}
MODELS = {"claude": "claude-sonnet-5", "codex": "gpt-5.6", "openai": "gpt-test-mini"}


CONFIG_ENV = ("CLAUDE_CONFIG_DIR", "CODEX_HOME")


def install_standin(tmp_path: Path, cli: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An executable ``cli`` that runs the stand-in with this interpreter, named by the
    harness's ``ZEROSHOT_<CLI>_BIN`` (the detached controller inherits it). Its script and
    state live in the CLIs' configuration folder (:func:`agent_home`), the one place
    outside its workspace its box lets it write."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / cli
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STANDINS / f"{cli}_standin.py"}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv(BIN_ENV[cli], str(path))
    home = tmp_path / "agent-home"
    home.mkdir(exist_ok=True)
    for name in CONFIG_ENV:
        monkeypatch.setenv(name, str(home))
    return path


def agent_home() -> Path:
    """The stand-ins' configuration folder (set by :func:`install_standin`)."""
    return Path(os.environ[CONFIG_ENV[0]])


def script(ws: Workspace | None = None, **nodes: list[dict[str, Any]]) -> None:
    """What the stand-in answers, per node and turn (see ``agent_standins.scripted_agent``)."""
    (agent_home() / "standin.json").write_text(json.dumps(nodes))


def calls(ws: Workspace | None = None) -> list[dict[str, Any]]:
    path = agent_home() / ".standin" / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def hang_file() -> Path:
    return agent_home() / ".standin" / "pids.json"


def hung_name() -> str:
    """The name the hanging stand-in, its child and its daemon gave themselves."""
    name: str = json.loads(read_pid_file(hang_file()))["name"]
    return name


def instructed(node: dict[str, Any], text: str | None = None) -> dict[str, Any]:
    node["instructions"] = text or f"Do the work of {node['name']}."
    return node


def agent_plan(harness: str, **nodes: dict[str, Any]) -> dict[str, Any]:
    return {
        "harness": harness,
        "model": MODELS[harness],
        "nodes": {name: {"kind": "agent", **extra} for name, extra in nodes.items()},
    }


def one_step(harness: str, *, timeout_ms: int = 8_000, **binding: Any) -> g.Scenario:
    """``work`` (an agent) takes ``{value}`` and returns ``{value}``, then succeed."""
    work = instructed(g.value_step("work", timeout_ms=timeout_ms), "Add one to value.")
    root = g.seq("root", g.VALUE, work, g.value_result())
    return g.graph(g.VALUE, root), agent_plan(harness, work=binding)


def judged_step(harness: str) -> g.Scenario:
    """A verifier ``judge`` on ``{value}``; accepted -> succeed, else fail ``rejected``."""
    judge = instructed(g.verifier("judge", input=g.VALUE, reads={"value": g.state("value")}))
    route = g.choice(
        "route",
        g.VALUE,
        [(g.signalled("judge", "verdict", "accepted"), g.value_result("ok"))],
        g.fail("no", "rejected"),
    )
    return g.graph(g.VALUE, g.seq("root", g.VALUE, judge, route)), agent_plan(harness, judge={})


def refine_loop(harness: str, bump_scope: str, gate_scope: str) -> g.Scenario:
    """``bump`` adds one, ``gate`` accepts at 3: three iterations from value 0."""
    body = g.seq(
        "iteration",
        g.VALUE,
        instructed(g.value_step("bump")),
        instructed(g.verifier("gate", input=g.VALUE, reads={"value": g.state("value")})),
        promote=("value",),
    )
    root = g.seq(
        "root",
        g.VALUE,
        g.loop(
            "refine",
            g.VALUE,
            body,
            until=g.signalled("gate", "verdict", "accepted"),
            max_iterations=5,
            promote=("value",),
        ),
        g.value_result(),
    )
    plan = agent_plan(harness, bump={"sessionScope": bump_scope}, gate={"sessionScope": gate_scope})
    return g.graph(g.VALUE, root), plan


def ledger_bytes(ws: Workspace) -> bytes:
    files = [p for p in ws.ledger_path.parent.iterdir() if p.name.startswith("ledger.db")]
    return b"".join(path.read_bytes() for path in files)


def controller_logs(ws: Workspace) -> str:
    folder = ws.root / ".zeroshot" / "controllers"
    return "".join(p.read_text() for p in folder.glob("*.log")) if folder.exists() else ""


def no_env(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    for name in names:
        monkeypatch.delenv(name, raising=False)
    assert not any(name in os.environ for name in names)
