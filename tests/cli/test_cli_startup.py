"""``zeroshot --help`` stays quick because the command line imports what a command needs
only when that command runs: no help text loads the ledger's database layer, HTTP clients,
IPython, notebooks or numerics. (The time itself is measured in bench/b12_cli_startup.py.)"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "sqlalchemy",
    "sqlmodel",
    "zeroshot_kernel.ledger.store",
    "zeroshot_kernel.client",
    "zeroshot_kernel.admission",
    "zeroshot_kernel.engine",
    "zeroshot_kernel.harness",
    "httpx",
    "IPython",
    "ipywidgets",
    "jupyter_client",
    "nbformat",
    "papermill",
    "matplotlib",
    "numpy",
    "dask",
    "distributed",
    "optuna",
    "yaml",
)
"""What no ``--help`` may import (a package and its submodules)."""

# Runs every command's --help in one fresh process, recording which heavy modules each
# one brought in first; prints {command: [modules]} as JSON.
PROBE = """
import contextlib, io, json, sys
from zeroshot_kernel.cli import app, main
import typer.main

heavy = {heavy!r}
def loaded():
    return {{m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy)}}

def paths(command, prefix):
    yield prefix
    if hasattr(command, "commands"):
        for name, sub in sorted(command.commands.items()):
            yield from paths(sub, [*prefix, name])

found = {{}}
before = loaded()
for path in paths(typer.main.get_command(app), []):
    sys.argv = ["zeroshot", *path, "--help"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main()
    now = loaded()
    found[" ".join(path) or "(top)"] = sorted(now - before)
    before = now
print(json.dumps(found))
"""


def _probe(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow  # fresh interpreters, one per command
def test_no_help_text_imports_a_heavy_module() -> None:
    found = json.loads(_probe(PROBE.format(heavy=HEAVY)))
    assert len(found) > 30, found  # every group and command was walked
    assert "research run" in found and "batch run" in found
    assert {command: mods for command, mods in found.items() if mods} == {}


def test_the_top_level_help_does_not_even_build_pydantic_models() -> None:
    """Typer builds each subcommand's parameter adapters with pydantic; the top-level help
    builds none, so pydantic (and with it every contract model) stays out too, and so does
    the ledger package, errors included."""
    code = (
        "import sys, contextlib, io\n"
        "sys.argv = ['zeroshot', '--help']\n"
        "from zeroshot_kernel.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic' "
        "or m.startswith('zeroshot_kernel.ledger')))"
    )
    assert _probe(code).strip() == "[]"


def test_a_command_that_runs_still_imports_what_it_needs() -> None:
    """The imports moved into the commands' bodies: running one works as before."""
    done = subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", "schema", "diagnostic"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["title"] == "GraphDiagnostic"
