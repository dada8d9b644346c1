"""``make demo``'s code as a user runs it: a headless auto-research run of a bundled task,
then the report notebook executed with papermill and exported to HTML."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from zeroshot_kernel.auto_research.commands import round_line
from zeroshot_kernel.auto_research.views import load_research_view
from zeroshot_kernel.client import Client

# slow: a real research run, then papermill and nbconvert
pytestmark = pytest.mark.slow

ROUNDS = 2


def test_demo_runs_the_rounds_and_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "zeroshot_kernel.demo",
            "--task",
            "rosenbrock",
            "--iterations",
            str(ROUNDS),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # The report's kernel listens on a private Unix socket: no warning about TCP in the output.
    assert "without encryption" not in done.stdout + done.stderr
    printed = done.stdout.splitlines()

    # The rounds it printed are the ledger's rounds, one line each.
    client = Client(workspace=str(out))
    [run] = client.runs()
    view = load_research_view(client.ledger, run.run_id)
    assert [r.round for r in view.rounds] == list(range(1, ROUNDS + 1))
    assert [line for line in printed if line.startswith("round")] == [
        round_line(r) for r in view.rounds
    ]
    assert printed[0].startswith(f"auto-research on rosenbrock: run {run.run_id}, {ROUNDS} rounds")
    assert any(line.startswith("finished in ") and line.endswith(": succeeded") for line in printed)
    assert view.incumbent is not None
    assert any(
        line.startswith(f"incumbent {view.incumbent.candidate_id}: metric ")
        and f"plateau {view.plateau} round(s)" in line
        for line in printed
    )

    [report_line] = [line for line in printed if line.startswith("report: ")]
    report = Path(report_line.removeprefix("report: "))
    assert report == out / "report.html" and report.is_file()
    page = report.read_text(encoding="utf-8")
    assert re.search(r'src="data:image/png;base64,[A-Za-z0-9+/=\s]{200,}"', page), (
        "the plateau chart is embedded as a PNG"
    )
    rows = re.findall(r'<tr class="zeroshot-(adopted|rejected|crashed|remeasured)"', page)
    assert len(rows) == ROUNDS  # one evidence row per round, newest first
    assert rows == [
        "adopted" if r.adopted else "crashed" if r.metric is None else "rejected"
        for r in reversed(view.rounds)
    ]
    for round_view in view.rounds:
        assert f"{round_view.parent_id} → {round_view.candidate_id}" in page
    assert (out / ".zeroshot" / "research" / "rosenbrock" / "incumbent.json").is_file()
