"""B12: how long ``zeroshot --help`` and a few subcommands' ``--help`` take from a cold
process, side by side with other command lines installed in the same environment.

Every sample is a fresh process started as a user starts it (the console script), its
output discarded, so the figure is interpreter start, imports and the help text: what
lazy imports are for. The floors and peers, and why each:

- ``python -c pass``: the interpreter alone, the least any Python command can take;
- a one-command Typer app's ``--help``: the framework we build on, with nothing of ours;
  its subcommand help also builds Typer's parameter adapters (which import pydantic), as
  ours does;
- ``optuna --help``: a research tool's command line (cliff), the peer of B5 and B7;
- ``papermill --help``: a notebook runner's command line (click), the peer of B6.

The bars: ``zeroshot --help`` in under 0.5 s (the issue's), taken on the fastest of the
repeats because an absolute time on a shared machine measures its load as much as the
command (the median is shown too); and every ``--help`` within 1.5 x the bare Typer app's
(the ratio, per repeat, which load affects far less).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.harness import (
    PeerMissing,
    Report,
    Sample,
    Summary,
    alternate,
    ratios,
    timed,
    verdict,
    versions,
)

BAR_SECONDS = 0.5
BAR_RATIO = 1.5
BIN = Path(sys.executable).parent
TYPER_APP = '''import typer

app = typer.Typer()


@app.command()
def hello(name: str, count: int = 1) -> None:
    """Say hello."""


@app.command()
def bye() -> None:
    """Say goodbye."""


app()
'''


def _script(name: str) -> str:
    found = shutil.which(name, path=str(BIN))
    if found is None:
        raise PeerMissing(f"{name} is not installed in {BIN}")
    return found


def _sampler(command: Sequence[str]) -> Sample:
    return lambda: _sample(command)


def _sample(command: Sequence[str]) -> float:
    def run() -> None:
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

    return timed(run)


def run(repeats: int) -> Report:
    report = Report("B12", "CLI start-up: `--help` from a cold process")
    report.versions = versions(["zeroshot-workbench", "typer", "optuna", "papermill"])
    with tempfile.TemporaryDirectory(prefix="zeroshot-b12-") as folder:
        app = Path(folder) / "typer_app.py"
        app.write_text(TYPER_APP, encoding="utf-8")
        zeroshot = _script("zeroshot")
        commands: dict[str, list[str]] = {
            "python -c pass (floor)": [sys.executable, "-c", "pass"],
            "typer app --help (floor)": [sys.executable, str(app), "--help"],
            "typer app hello --help (floor)": [sys.executable, str(app), "hello", "--help"],
            "zeroshot --help": [zeroshot, "--help"],
            "zeroshot research run --help": [zeroshot, "research", "run", "--help"],
            "zeroshot validate --help": [zeroshot, "validate", "--help"],
            "zeroshot batch run --help": [zeroshot, "batch", "run", "--help"],
        }
        peers: dict[str, list[str]] = {}
        for peer in ("optuna", "papermill"):
            try:
                peers[f"{peer} --help (peer)"] = [_script(peer), "--help"]
            except PeerMissing as missing:
                report.notes.append(f"{missing}: its figures and ratios are left out.")
        commands |= peers
        for command in commands.values():  # warm the file cache; not timed
            _sample(command)
        samples = alternate({name: _sampler(c) for name, c in commands.items()}, repeats)
    summaries = {name: Summary.of(values) for name, values in samples.items()}
    report.table(
        ["command", "seconds (median)", "spread (min - max)"],
        [[name, f"{s.median:.3f}", s.spread()] for name, s in summaries.items()],
    )
    top = summaries["zeroshot --help"]
    rows = [
        [
            "zeroshot --help, seconds (fastest of the repeats; median)",
            f"{top.low:.3f}; {top.median:.3f}",
            "",
            f"≤ {BAR_SECONDS}",
            verdict(top.low, BAR_SECONDS),
        ]
    ]
    for ours, floor in (
        ("zeroshot --help", "typer app --help (floor)"),
        ("zeroshot research run --help", "typer app hello --help (floor)"),
        ("zeroshot validate --help", "typer app hello --help (floor)"),
        ("zeroshot batch run --help", "typer app hello --help (floor)"),
    ):
        ratio = ratios(samples[ours], samples[floor])
        rows.append(
            [
                f"{ours} / {floor}",
                f"{ratio.median:.2f}",
                ratio.spread(),
                f"≤ {BAR_RATIO}",
                verdict(ratio.median, BAR_RATIO),
            ]
        )
    for peer in peers:
        ratio = ratios(samples["zeroshot --help"], samples[peer])
        rows.append([f"zeroshot --help / {peer}", f"{ratio.median:.2f}", ratio.spread(), "", ""])
    report.table(["ratio", "median", "spread (min - max)", "bar", "verdict"], rows)
    report.notes += [
        f"{repeats} repeats after one untimed run of each command; the commands alternate "
        "with a rotating order; a sample is one whole process, started and waited for.",
        "What `--help` may not import is checked by tests/cli/test_cli_startup.py (the cause); "
        "this measures the time (the effect).",
    ]
    return report
