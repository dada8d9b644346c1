"""Fuzzing ``zeroshot validate`` (and ``run``'s input parsing) with damaged conformance
documents: every case ends with exit 0, 1 or 2 and never a traceback. Most cases run in
this process through the CLI's app; a sample runs as real subprocesses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_fuzz import cases
from typer.testing import CliRunner

from zeroshot_kernel.cli import app

SEED = 20261204
IN_PROCESS_CASES = 300
SUBPROCESS_CASES = 6
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "headline.yaml"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


@pytest.mark.slow  # thousands of damaged documents; a zeroshot process per case
def test_damaged_graphs_end_in_an_exit_code_never_an_exception(
    conformance: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    outcomes: dict[str, int] = {}
    for number, text in cases(conformance / "fixtures", IN_PROCESS_CASES, SEED):
        path = _write(tmp_path / f"case-{number}.json", text)
        result = runner.invoke(app, ["validate", str(path)])
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            number,
            repr(result.exception),
            text[:300],
        )
        assert result.exit_code in (0, 1, 2), (number, result.output[-500:])
        refused = "the graph document was refused" in result.output
        kind = "refused when read" if refused else f"exit {result.exit_code}"
        outcomes[kind] = outcomes.get(kind, 0) + 1
    # The mutations reach past reading: some graphs are rejected with diagnostics of their
    # content, some are refused as documents (also exit 1), and they are not all one kind.
    assert outcomes.get("exit 1", 0) > 20 and outcomes.get("refused when read", 0) > 20, outcomes


@pytest.mark.slow  # thousands of damaged documents through the CLI
def test_damaged_documents_as_input_and_runtime_end_in_an_exit_code(
    conformance: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    for number, text in cases(conformance / "fixtures", 100, SEED + 1):
        path = _write(tmp_path / f"doc-{number}.json", text)
        for option in ("--input", "--runtime"):
            result = runner.invoke(app, ["validate", str(EXAMPLE), option, f"@{path}"])
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                number,
                option,
                repr(result.exception),
            )
            assert result.exit_code in (0, 1, 2)


@pytest.mark.slow  # thousands of damaged documents; a zeroshot process per case
@pytest.mark.parametrize("number", range(SUBPROCESS_CASES))
def test_a_sample_through_the_real_command_prints_no_traceback(
    conformance: Path, tmp_path: Path, number: int
) -> None:
    [(_, text)] = [
        case for case in cases(conformance / "fixtures", number + 1, SEED + 2) if case[0] == number
    ]
    path = _write(tmp_path / "case.json", text)
    ran = subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        errors="replace",
    )
    assert ran.returncode in (0, 1, 2)
    assert "Traceback" not in ran.stdout + ran.stderr
