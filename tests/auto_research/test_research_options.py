"""One declaration of the research options: ``zeroshot research run``, ``%zeroshot
research`` and the Launcher expose every declared option with the same default and bounds,
and refuse a bad value with the same words, before anything is recorded."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from workbench_support import TASK, research_workspace
from zeroshot_widgets import Launcher

import zeroshot_kernel
from zeroshot_kernel.auto_research.options import (
    MAX_TOKENS_LIMIT,
    RESEARCH_OPTIONS,
    by_name,
    research_problems,
)
from zeroshot_kernel.cli import app
from zeroshot_kernel.client import Client
from zeroshot_kernel.exceptions import InvalidInput
from zeroshot_kernel.harness.plan import MAX_MAX_TOKENS
from zeroshot_kernel.magics import line_app

ENV = {option.envvar for option in RESEARCH_OPTIONS if option.envvar is not None}


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    root = research_workspace(tmp_path)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    zeroshot_kernel.load_ipython_extension(ip)
    yield ip
    zeroshot_kernel.unload_ipython_extension(ip)


def _params(group: Any, *path: str) -> dict[str, Any]:
    command = typer.main.get_command(group)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    return {param.name: param for param in command.params}


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ENV}
    return subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def _magic(shell: InteractiveShell, text: str, *, fails: bool = False) -> tuple[str, str]:
    """What ``%zeroshot TEXT`` printed; ``fails``: the command fails, and so its cell."""
    with capture_output() as captured:
        if fails:
            with pytest.raises(UsageError, match=r"failed \(exit status [12]\)"):
                shell.run_line_magic("zeroshot", text)
        else:
            shell.run_line_magic("zeroshot", text)
    return captured.stdout, captured.stderr


def test_the_cli_and_the_magic_take_every_declared_option_alike() -> None:
    cli = _params(app, "research", "run")
    magic = _params(line_app, "research")
    for option in RESEARCH_OPTIONS:
        for front, params in (("cli", cli), ("magic", magic)):
            param = params[option.name]
            shown = (front, option.name)
            assert param.opts == [option.flag], shown
            assert param.default == option.default, shown
            assert param.envvar == option.envvar, shown
            assert param.help == option.help, shown
            if option.low is not None:
                assert (param.min, param.max) == (option.low, option.high), shown


def test_the_help_texts_list_every_declared_option(
    workspace: Path, shell: InteractiveShell
) -> None:
    helped = _cli(workspace, "research", "run", "--help")
    assert helped.returncode == 0, helped.stderr
    magic_help, _ = _magic(shell, "research --help")
    for option in RESEARCH_OPTIONS:
        assert option.flag in helped.stdout and option.flag in magic_help, option.name
    assert "[default: 10; 1<=x<=100]" in helped.stdout and "[default: 10" in magic_help


def test_the_launcher_has_a_field_per_option_and_starts_from_the_defaults(
    workspace: Path,
) -> None:
    launcher = Launcher(Client(workspace=str(workspace)), task=TASK)
    try:
        assert list(launcher.fields) == [option.name for option in RESEARCH_OPTIONS]
        assert launcher.research() == {option.name: option.default for option in RESEARCH_OPTIONS}
        assert launcher.fields["harness"].options == by_name("harness").choices
        iterations = launcher.fields["iterations"]
        assert (iterations.min, iterations.max) == (by_name("iterations").low, 100)
        assert launcher.validate(), launcher.diagnostics.value
    finally:
        launcher.close()


@pytest.mark.slow  # a zeroshot process and an IPython shell per case
@pytest.mark.parametrize(
    "args",
    [
        ["--harness", "python"],
        ["--iterations", "0"],
        ["--iterations", "many"],
        ["--max-tokens", "0"],
        ["--parallel", "x"],
        ["--parallel", "33"],
    ],
)
def test_a_bad_value_is_refused_by_the_cli_and_the_magic_alike(
    workspace: Path, shell: InteractiveShell, args: list[str]
) -> None:
    refused = _cli(workspace, "research", "run", TASK, *args)
    magic_out, magic_err = _magic(shell, " ".join(["research", TASK, *args]), fails=True)
    assert refused.returncode in (1, 2) and "Traceback" not in refused.stderr
    assert refused.stdout == "" and magic_out == ""
    cli_errors = [x for x in refused.stderr.splitlines() if x.lower().startswith("error")]
    magic_errors = [x for x in magic_err.splitlines() if x.lower().startswith("error")]
    assert cli_errors == magic_errors and len(cli_errors) == 1, (cli_errors, magic_errors)
    assert Client(workspace=str(workspace)).runs() == []


@pytest.mark.slow  # a zeroshot process and an IPython shell per case
def test_the_launcher_refuses_an_unsuitable_harness_in_the_cli_s_words(workspace: Path) -> None:
    refused = _cli(workspace, "research", "run", TASK, "--harness", "python")
    with pytest.raises(InvalidInput) as raised:
        Launcher(Client(workspace=str(workspace)), task=TASK, harness="python")
    assert refused.stderr.strip() == f"error: {raised.value}. Nothing was started."
    assert research_problems({"harness": "python"}) == [str(raised.value)]


def test_the_declared_bounds_are_the_plan_s() -> None:
    assert MAX_TOKENS_LIMIT == MAX_MAX_TOKENS
