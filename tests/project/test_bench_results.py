"""bench/results.md is rewritten by every benchmark run: a run replaces its own section and
keeps every other one and the hand-written analysis; a damaged file is refused whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness import Report, write_results


def report(key: str, note: str) -> Report:
    written = Report(key, f"{key} title")
    written.table(["case", "value"], [["ours", "1.0"]])
    written.notes.append(note)
    return written


def test_a_run_replaces_its_section_and_keeps_the_others(tmp_path: Path) -> None:
    results = tmp_path / "results.md"
    write_results([report("B2", "first B2"), report("B10", "first B10")], results)
    with results.open("a") as handle:
        handle.write("<!-- analysis -->\nWritten by hand.\n<!-- /analysis -->\n")
    write_results([report("B2", "second B2")], results)
    text = results.read_text()
    assert "second B2" in text and "first B2" not in text
    assert "first B10" in text and text.index("## B2:") < text.index("## B10:")
    assert text.endswith("<!-- analysis -->\nWritten by hand.\n<!-- /analysis -->\n")


def test_a_section_without_its_closing_marker_is_refused_and_nothing_written(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results.md"
    damaged = "<!-- B5 -->\n## B5: lost end\n<!-- B6 -->\n## B6\n<!-- /B6 -->\n"
    results.write_text(damaged)
    with pytest.raises(ValueError, match="section B5 has no closing marker"):
        write_results([report("B9", "new B9")], results)
    assert results.read_text() == damaged
