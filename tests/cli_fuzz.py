"""Mutations of the conformance documents, fed to ``zeroshot validate``.

Each case starts from a graph of the reference fixtures and damages it the way hostile or
broken input does: a value swapped for something huge, deep, empty, out of range or not
text (lone surrogates), a key renamed or removed, a subtree copied, the text cut short or
sprinkled with bytes, or the document re-written as YAML. The suite runs a few hundred
cases with a fixed seed (``tests/cli/test_cli_fuzz.py``); for more::

    python tests/cli_fuzz.py --cases 20000 --seed 7
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

HOSTILE_VALUES: list[Callable[[random.Random], Any]] = [
    lambda r: None,
    lambda r: "",
    lambda r: [],
    lambda r: {},
    lambda r: -1,
    lambda r: 2**70,
    lambda r: 1e308,
    lambda r: r.random(),
    lambda r: True,
    lambda r: "x" * r.choice([300, 70_000]),
    lambda r: "\ud800" + "tail",
    lambda r: "a\u0000b\u001fc",
    lambda r: "ünïcødé ☃ " * 3,
    lambda r: "../" * 50 + "etc/passwd",
    lambda r: {"kind": r.choice(["seq", "step", "par", "loop", "map", "choice", "nope"])},
    lambda r: {f"k{n}": n for n in range(r.choice([10, 2000]))},
    lambda r: _deep(r.choice([20, 120])),
    lambda r: [None] * r.choice([3, 5000]),
]


def _deep(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def graphs(fixtures: Path) -> list[Any]:
    """Every graph in the reference fixtures (verifier cases carry theirs under ``graph``)."""
    found = []
    for path in sorted(fixtures.glob("**/*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        graph = document.get("graph", document) if isinstance(document, dict) else document
        if isinstance(graph, dict) and "root" in graph:
            found.append(graph)
    return found


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _parent(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        document = document[step]
    return document


def mutate(graph: Any, r: random.Random) -> str:
    """The text of one damaged version of ``graph``."""
    document = copy.deepcopy(graph)
    for _ in range(r.randint(1, 3)):
        paths = [p for p in _paths(document) if p]
        if not paths:
            break
        path = r.choice(paths)
        parent, last = _parent(document, path), path[-1]
        action = r.randrange(4)
        if action == 0:
            parent[last] = r.choice(HOSTILE_VALUES)(r)
        elif action == 1 and isinstance(parent, dict):
            parent.pop(last)
        elif action == 2 and isinstance(parent, dict):
            name = r.choice(["\udcff", "n" * 5000, "", "kind", "root", "__proto__"])
            parent[name] = parent.pop(last)
        else:
            parent[last] = copy.deepcopy(document)
    text = json.dumps(document)
    form = r.randrange(7)
    if form == 0:
        text = text[: r.randrange(len(text) + 1)]
    elif form == 1:
        spot = r.randrange(len(text) + 1)
        text = (
            text[:spot]
            + r.choice(["\x00", "\\", '"', "}", "]]", "\\ud800", "\ufeff"])
            + text[spot:]
        )
    elif form == 2:
        depth = r.choice([100, 300, 5000])
        text = "[" * depth + text + "]" * depth
    elif form == 3:
        with contextlib.suppress(ValueError, yaml.YAMLError, RecursionError):
            text = yaml.safe_dump(json.loads(text), allow_unicode=False)
    return text


def cases(fixtures: Path, count: int, seed: int) -> Iterator[tuple[int, str]]:
    r = random.Random(seed)
    sources = graphs(fixtures)
    for number in range(count):
        yield number, mutate(r.choice(sources), r)


def main() -> int:
    from conftest import conformance_dir
    from typer.testing import CliRunner

    from zeroshot_kernel.cli import app

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--fixtures",
        type=Path,
        default=conformance_dir() / "fixtures",
        help="default: the fixtures of ZEROSHOT_CONFORMANCE_DIR, as the tests",
    )
    parser.add_argument("--work", type=Path, default=Path("fuzz-work"))
    args = parser.parse_args()
    args.work.mkdir(exist_ok=True)
    runner, bad = CliRunner(), 0
    for number, text in cases(args.fixtures, args.cases, args.seed):
        path = args.work / "case.json"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        result = runner.invoke(app, ["validate", str(path)])
        if result.exit_code not in (0, 1, 2) or (
            result.exception is not None and not isinstance(result.exception, SystemExit)
        ):
            bad += 1
            (args.work / f"failure-{number}.json").write_text(
                text, encoding="utf-8", errors="surrogatepass"
            )
            print(f"case {number}: exit {result.exit_code}: {result.exception!r}")
    print(f"{args.cases - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
