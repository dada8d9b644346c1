"""What every benchmark shares: timing side by side, summaries, versions, tables, results.md.

These machines are shared and noisy, so a figure that matters is a ratio of cases measured
in the same run: every repeat runs each case once, in a rotated order, and a ratio is taken
within each repeat before the median over repeats is reported with its spread.
"""

from __future__ import annotations

import datetime
import gc
import importlib.metadata
import os
import platform
import re
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

RESULTS = Path(__file__).with_name("results.md")
PEER_HINT = "install the peers with `pip install -e '.[bench]'`"


class PeerMissing(RuntimeError):
    """A peer package is not installed: its figures, and every ratio to them, are skipped."""


@dataclass(frozen=True)
class Summary:
    """The median of some samples and their spread (min and max)."""

    median: float
    low: float
    high: float
    count: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Summary:
        return cls(statistics.median(samples), min(samples), max(samples), len(samples))

    def spread(self, digits: int = 3) -> str:
        return f"{self.low:.{digits}g} - {self.high:.{digits}g}"


Sample = Callable[[], float]
"""Runs one measurement of a case and returns its figure (set up outside the timing)."""


def alternate(cases: Mapping[str, Sample], repeats: int) -> dict[str, list[float]]:
    """Run every case once per repeat, rotating which goes first, and collect the figures.

    The garbage collector runs between samples, never inside one."""
    names = list(cases)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(repeats):
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            gc.collect()
            gc.disable()
            try:
                samples[name].append(cases[name]())
            finally:
                gc.enable()
    return samples


def ratios(numerator: Sequence[float], denominator: Sequence[float]) -> Summary:
    """Per-repeat ratios (the two cases ran close together), summarised."""
    return Summary.of([a / b for a, b in zip(numerator, denominator, strict=True)])


def timed(action: Callable[[], object]) -> float:
    """Seconds one call of ``action`` took."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def require(module: str) -> None:
    """Import ``module`` or raise :class:`PeerMissing` naming it."""
    try:
        importlib.import_module(module)
    except ImportError as missing:
        raise PeerMissing(f"{module} is not installed ({PEER_HINT})") from missing


def versions(packages: Iterable[str]) -> dict[str, str]:
    """Installed versions (``missing`` for a package that is not installed)."""
    found = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for package in packages:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = "missing"
    return found


def machine() -> dict[str, str]:
    """What the figures were measured on, including how busy it was."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "platform": platform.platform(),
        "cpu": f"{cpu} ({os.cpu_count()} logical CPUs)",
        "python": f"{platform.python_version()} ({sys.executable})",
    }


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


@dataclass
class Report:
    """One benchmark's results: prose, tables and verdicts, printable and storable."""

    key: str
    title: str
    notes: list[str] = field(default_factory=list)
    tables: list[tuple[list[str], list[list[str]]]] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    measured: str = field(default_factory=lambda: _now())
    load: str = field(default_factory=lambda: _load())

    def table(self, header: list[str], rows: list[list[str]]) -> None:
        self.tables.append((header, rows))

    def markdown(self) -> str:
        lines = [
            f"## {self.key}: {self.title}",
            "",
            f"Measured {self.measured} (load average at start {self.load}).",
            "",
        ]
        if self.versions:
            lines += [
                "Versions: " + ", ".join(f"{k} {v}" for k, v in self.versions.items()),
                "",
            ]
        for header, rows in self.tables:
            lines += [_row(header), _row(["---"] * len(header))]
            lines += [_row(row) for row in rows]
            lines.append("")
        lines += [f"- {note}" for note in self.notes]
        return "\n".join(lines).rstrip() + "\n"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def verdict(value: float, bar: float) -> str:
    """Whether ``value`` is within ``bar`` (a ceiling), and by how much it misses."""
    if value <= bar:
        return "met"
    return f"**missed** ({value / bar:.2f}x the bar)"


def write_results(reports: Sequence[Report], path: Path = RESULTS) -> None:
    """Replace the sections of ``reports`` in results.md, keep the others and the
    hand-written analysis, refresh the header (machine and date)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    sections = dict(re.findall(r"<!-- (B\d+) -->\n(.*?)<!-- /\1 -->", text, flags=re.S))
    unclosed = [key for key in re.findall(r"<!-- (B\d+) -->", text) if key not in sections]
    if unclosed:  # rewriting would drop them
        raise ValueError(
            f"{path}: section {', '.join(unclosed)} has no closing marker; "
            "fix it by hand (nothing was written)"
        )
    analysis = re.search(r"<!-- analysis -->\n.*?<!-- /analysis -->\n", text, flags=re.S)
    for report in reports:
        sections[report.key] = report.markdown()
    header = [
        "# Benchmark results",
        "",
        "Written by `python -m bench` (`make bench`); see `shared/design/benchmarks.md` for",
        "what each benchmark measures and its bar. Every ratio is measured side by side in",
        "one run (cases alternated, median of the per-repeat ratios, min - max spread).",
        "The analysis at the end is written by hand and kept when the figures are rewritten.",
        "",
        f"Last written: {_now()}, on:",
        "",
        *(f"- {key}: {value}" for key, value in machine().items()),
        "",
    ]
    body = [
        f"<!-- {key} -->\n{sections[key]}<!-- /{key} -->\n" for key in sorted(sections, key=_order)
    ]
    if analysis is not None:
        body.append(analysis.group(0))
    path.write_text("\n".join(header) + "\n" + "\n".join(body), encoding="utf-8")


def _order(key: str) -> int:
    return int(key[1:])
