"""The ``openai`` harness out of the box: ``zeroshot research run TASK --harness openai
--base-url URL`` (and the magic, the Launcher and saved profiles) against a loopback
OpenAI-compatible server (``chat_server``) with no key set, ``max_tokens`` on every
request, and the shipped ``examples/headline.openai.yaml`` plan."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from auto_research_support import RUN_TIMEOUT_S, ResearchModel, new_workspace
from chat_server import ChatServer, chat_server
from conftest import PROJECT_ROOT

from zeroshot_kernel.client import Client
from zeroshot_kernel.ledger.events import NodeCompleted, SucceededResult
from zeroshot_kernel.templates import TemplateOptions, expand_template

# slow: real research runs from zeroshot processes against a loopback model server
pytestmark = pytest.mark.slow

KEY_ENV = "OPENAI_API_KEY"
AGENTS = {"scout_exploration", "scout_synthesis", "scout_challenge", "researcher", "reviewer"}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    """A keyless local server; no key, no base-URL default in this process's environment."""
    for name in (KEY_ENV, "OPENAI_BASE_URL", "ZEROSHOT_OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ZEROSHOT_HTTP_BACKOFF_S", "0.01")
    with chat_server({"respond": ResearchModel()}) as running:
        yield running


def zeroshot(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in (KEY_ENV, "OPENAI_BASE_URL", "ZEROSHOT_OPENAI_BASE_URL")
    }
    return subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env={
            **clean,
            "GIT_CEILING_DIRECTORIES": str(cwd.parent),
            "ZEROSHOT_HTTP_BACKOFF_S": "0.01",
            **env,
        },
    )


def agents_reached(server: ChatServer) -> list[dict[str, Any]]:
    requests = server.completions()
    assert requests, "no node reached the server"
    for request in requests:
        assert "authorization" not in {name.lower() for name in request["headers"]}
    return [request["body"] for request in requests]


def completed_agents(client: Client, run_id: str) -> list[NodeCompleted]:
    return [
        e
        for _, e in client.run(run_id).events()
        if isinstance(e, NodeCompleted) and e.completion.reference.node in AGENTS
    ]


def assert_every_agent_verified(client: Client, run_id: str) -> None:
    completed = completed_agents(client, run_id)
    assert {c.completion.reference.node for c in completed} == AGENTS
    assert all(c.completion.outcome.status != "error" for c in completed), completed


# -- the expanded plan ------------------------------------------------------------------


def test_the_openai_plan_declares_its_connection_and_token_budget() -> None:
    runtime = expand_template(
        "auto-research",
        TemplateOptions(
            task="branin",
            harness="openai",
            model="m",
            base_url="http://127.0.0.1:8080/v1/",
            max_tokens=2048,
        ),
    ).runtime
    assert runtime["connections"] == {
        "openai": {"env": KEY_ENV, "baseUrl": "http://127.0.0.1:8080/v1"}
    }
    assert runtime["maxTokens"] == 2048
    for name, binding in runtime["nodes"].items():
        expected = ["openai"] if name in AGENTS else None
        assert binding.get("connections") == expected, name
    hosted = expand_template("auto-research", TemplateOptions(task="branin", harness="openai"))
    assert hosted.runtime["connections"] == {"openai": {"env": KEY_ENV}}
    assert "maxTokens" not in hosted.runtime
    local = expand_template(
        "auto-research", TemplateOptions(task="branin", base_url="http://127.0.0.1:8080/v1")
    ).runtime
    assert "connections" not in local
    assert all("connections" not in b for b in local["nodes"].values())
    with pytest.raises(ValueError, match="not an http"):
        expand_template(
            "auto-research",
            TemplateOptions(task="branin", harness="openai", base_url="127.0.0.1:8080"),
        )


def test_template_show_takes_the_base_url_from_the_environment(tmp_path: Path) -> None:
    shown = zeroshot(
        tmp_path,
        "template",
        "show",
        "auto-research",
        "--harness",
        "openai",
        "--max-tokens",
        "333",
        "--json",
        ZEROSHOT_OPENAI_BASE_URL="http://127.0.0.1:9/v1",
    )
    assert shown.returncode == 0, shown.stderr
    runtime = json.loads(shown.stdout)["runtime"]
    assert runtime["connections"]["openai"]["baseUrl"] == "http://127.0.0.1:9/v1"
    assert runtime["maxTokens"] == 333
    wrong = zeroshot(
        tmp_path, "template", "show", "auto-research", "--harness", "openai", "--max-tokens", "0"
    )
    assert wrong.returncode == 2 and "--max-tokens" in wrong.stderr


# -- the shipped example ------------------------------------------------------------------


def test_the_headline_example_validates_on_the_openai_harness(tmp_path: Path) -> None:
    examples = PROJECT_ROOT / "examples"
    checked = zeroshot(
        tmp_path,
        "validate",
        str(examples / "headline.yaml"),
        "--input",
        '{"topic": "ledgers"}',
        "--runtime",
        f"@{examples / 'headline.openai.yaml'}",
        "--json",
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["diagnostics"] == []
    python = zeroshot(
        tmp_path,
        "validate",
        str(examples / "headline.yaml"),
        "--input",
        '{"topic": "ledgers"}',
        "--runtime",
        f"@{examples / 'headline-runtime.json'}",
    )
    assert python.returncode == 0, python.stdout + python.stderr


# -- research runs reaching the server ------------------------------------------------------


def test_research_run_from_the_cli_reaches_a_keyless_server(
    tmp_path: Path, server: ChatServer
) -> None:
    workspace = new_workspace(tmp_path / "ws")
    ran = zeroshot(
        workspace,
        "research",
        "run",
        "branin",
        "--harness",
        "openai",
        "--base-url",
        server.base_url,
        "--iterations",
        "1",
        "--model",
        "standin",
        "--max-tokens",
        "1500",
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.startswith("started run-")
    assert "finished: succeeded" in ran.stdout
    bodies = agents_reached(server)
    assert {body["max_tokens"] for body in bodies} == {1500}
    assert {body["model"] for body in bodies} == {"standin"}
    client = Client(workspace=str(workspace))
    [summary] = client.runs()
    assert_every_agent_verified(client, summary.run_id)


def test_the_research_magic_takes_the_server_and_token_budget(
    tmp_path: Path, server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    import zeroshot_kernel

    workspace = new_workspace(tmp_path / "ws")
    monkeypatch.chdir(workspace)
    shell = InteractiveShell.instance()
    zeroshot_kernel.load_ipython_extension(shell)
    try:
        with capture_output() as captured:
            shell.run_line_magic(
                "zeroshot",
                f"research branin --harness openai --base-url "
                f"{server.base_url} --model standin --max-tokens 777 "
                "--iterations 1",
            )
        assert captured.stdout.startswith("started run-"), captured.stdout + captured.stderr
        run_id = captured.stdout.split()[1].rstrip(":")  # the CLI's line: "started RUN: ..."
        client = Client(workspace=str(workspace))
        terminal = client.run(run_id).wait(RUN_TIMEOUT_S)
        assert isinstance(terminal, SucceededResult), terminal
    finally:
        zeroshot_kernel.unload_ipython_extension(shell)
    assert {body["max_tokens"] for body in agents_reached(server)} == {777}
    assert_every_agent_verified(client, run_id)


def test_the_launcher_shows_the_server_field_for_openai_and_launches_on_it(
    tmp_path: Path, server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from zeroshot_widgets import Launcher

    workspace = new_workspace(tmp_path / "ws")
    monkeypatch.setenv("ZEROSHOT_OPENAI_BASE_URL", server.base_url)
    client = Client(workspace=str(workspace))
    launcher = Launcher(client, task="branin", iterations=1)
    assert launcher.base_url.value == server.base_url  # the environment's default
    assert launcher.harness_boxes["openai"].layout.display == "none"  # not for local
    assert launcher.options().base_url is None and launcher.options().max_tokens is None
    launcher.harness.value = "openai"
    assert launcher.harness_boxes["openai"].layout.display is None
    launcher.model.value = "standin"
    launcher.max_tokens.value = "999"

    launcher.base_url.value = "not a url"
    assert not launcher.validate()
    assert "not an http(s) URL" in launcher.diagnostics.value
    launcher.base_url.value = server.base_url
    assert launcher.validate(), launcher.diagnostics.value

    assert launcher.save_profile("branin-openai")
    saved = client.profiles.get("branin-openai")
    assert saved.template is not None
    assert saved.template.options["base_url"] == server.base_url
    assert saved.template.options["max_tokens"] == 999
    assert saved.runtime["connections"]["openai"]["baseUrl"] == server.base_url

    launcher.profile.value = ""  # launch the form, not the profile just selected
    monitor = launcher.launch()
    assert monitor is not None, launcher.diagnostics.value
    try:
        terminal = client.run(monitor.run_id).wait(RUN_TIMEOUT_S)
        assert isinstance(terminal, SucceededResult), terminal
    finally:
        launcher.close()
    assert {body["max_tokens"] for body in agents_reached(server)} == {999}
    assert_every_agent_verified(client, monitor.run_id)


def test_a_saved_profile_keeps_the_server_and_token_budget(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / "ws")
    saved = zeroshot(
        workspace,
        "profile",
        "save",
        "branin-local",
        "--template",
        "auto-research",
        "--task",
        "branin",
        "--harness",
        "openai",
        "--model",
        "standin",
        "--base-url",
        "http://127.0.0.1:8080/v1",
        "--max-tokens",
        "640",
    )
    assert saved.returncode == 0, saved.stdout + saved.stderr
    shown = zeroshot(workspace, "profile", "show", "branin-local", "--json")
    assert shown.returncode == 0, shown.stderr
    profile = json.loads(shown.stdout)
    assert profile["runtime"]["connections"] == {
        "openai": {"env": KEY_ENV, "baseUrl": "http://127.0.0.1:8080/v1"}
    }
    assert profile["runtime"]["maxTokens"] == 640
    assert profile["template"]["options"]["base_url"] == "http://127.0.0.1:8080/v1"
    assert profile["template"]["options"]["max_tokens"] == 640
    # the environment's default is not recorded for a harness that does not read it
    local = zeroshot(
        workspace,
        "profile",
        "save",
        "branin-embedded",
        "--template",
        "auto-research",
        "--task",
        "branin",
        ZEROSHOT_OPENAI_BASE_URL="http://127.0.0.1:8080/v1",
    )
    assert local.returncode == 0, local.stdout + local.stderr
    shown = json.loads(zeroshot(workspace, "profile", "show", "branin-embedded", "--json").stdout)
    assert not shown["runtime"]["connections"]
    assert set(shown["template"]["options"]) == {"task", "harness", "push"}
