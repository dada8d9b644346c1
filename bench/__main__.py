"""``python -m bench [NAME ...]``: run benchmarks (all by default), print their tables and
update their sections of ``bench/results.md``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from bench import (
    b1_step_overhead,
    b2_tail_read,
    b3_admission,
    b4_round_overhead,
    b5_best_so_far,
    b6_batch,
    b7_shared_sqlite,
    b9_parallel,
    b10_gate,
    b11_pruning,
    b12_cli_startup,
)
from bench.harness import Report, write_results

BENCHMARKS: dict[str, tuple[Callable[[int], Report], int]] = {
    "B1": (b1_step_overhead.run, 5),
    "B2": (b2_tail_read.run, 9),
    "B3": (b3_admission.run, 7),
    "B4": (b4_round_overhead.run, 3),
    "B5": (b5_best_so_far.run, 10),
    "B6": (b6_batch.run, 3),
    "B7": (b7_shared_sqlite.run, 2),
    "B9": (b9_parallel.run, 3),
    "B10": (b10_gate.run, 5),
    "B11": (b11_pruning.run, 5),
    "B12": (b12_cli_startup.run, 9),
}
"""Each benchmark and its default number of repeats (B5: seeds; B7: one sample per case,
of full length when repeats > 1, a quarter otherwise; B10: batches of 1,000 comparisons;
B11: seeds, each a pair of studies; B12: cold processes per command)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME", help="B1 ... B12 (default: all)")
    parser.add_argument("--repeats", type=int, help="override every benchmark's repeats")
    parser.add_argument("--no-write", action="store_true", help="leave results.md alone")
    args = parser.parse_args(argv)
    names = [name.upper() for name in args.names] or list(BENCHMARKS)
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    for name in names:
        run, repeats = BENCHMARKS[name]
        print(f"running {name} ...", file=sys.stderr, flush=True)
        report = run(args.repeats or repeats)
        print(report.markdown(), flush=True)
        if not args.no_write:  # each as it ends: a later benchmark's failure loses nothing
            write_results([report])
    return 0


if __name__ == "__main__":
    sys.exit(main())
