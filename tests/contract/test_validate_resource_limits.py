"""Resource attacks on the graph reader, through the real ``zeroshot validate`` and ``run``
and through the Python API: deep nesting (JSON and YAML, 10,000 levels), alias bombs, huge
integers, non-finite numbers, duplicate keys, non-UTF-8 bytes, huge files and strings. A
document the reader refuses ends in the documented one-line error naming the file (exit 2);
one that parses but cannot be a graph ends in located diagnostics (exit 1). Never a
traceback, and each within seconds."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from zeroshot_kernel.admission.admit import verify_document
from zeroshot_kernel.contract.parse import parse_graph
from zeroshot_kernel.contract.reading import (
    MAX_DOCUMENT_BYTES,
    MAX_NESTING,
    DocumentError,
    load_document,
    loads_document,
)

# slow: a real zeroshot process per case, bounded in time and memory
pytestmark = pytest.mark.slow

DEPTH = 10_000
DEADLINE_S = 60
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "headline.yaml"
NESTED = f"nested deeper than {MAX_NESTING} levels"
YAML_NESTED = f"(nested deeper than {MAX_NESTING} levels|exceeded maximum nesting depth)"


def _example() -> dict[str, Any]:
    document = yaml.safe_load(EXAMPLE.read_text())
    assert isinstance(document, dict)
    return document


def _array_type(depth: int) -> dict[str, Any]:
    kind: dict[str, Any] = {"kind": "string"}
    for _ in range(depth):
        kind = {"kind": "array", "items": kind}
    return kind


def _deep_type_graph(depth: int) -> str:
    """The example graph with a state field whose type is ``depth`` arrays deep: within
    the reader's nesting limit, past what a graph may be."""
    graph = _example()
    field = {"type": _array_type(depth), "required": False}
    graph["initialInput"]["fields"]["deep"] = field
    graph["root"]["state"]["fields"]["deep"] = field
    return json.dumps(graph)


# name -> (file name, contents, the words of the one-line error)
REFUSED: dict[str, tuple[str, str | bytes, str]] = {
    "JSON lists": ("lists.json", "[" * DEPTH + "]" * DEPTH, NESTED),
    "JSON objects": ("objects.json", '{"a":' * DEPTH + "1" + "}" * DEPTH, NESTED),
    "JSON nesting after a graph's fields": (
        "late.json",
        '{"profile": "openengine.graph.full/v1", "root": '
        + '{"a":' * DEPTH
        + "1"
        + "}" * (DEPTH + 1),
        NESTED,
    ),
    # (libyaml's own depth guard may speak first; either way one line, exit 2)
    "YAML flow lists": ("lists.yaml", "root: " + "[" * DEPTH + "]" * DEPTH + "\n", YAML_NESTED),
    "YAML flow mappings": (
        "maps.yaml",
        "root: " + "{a: " * DEPTH + "1" + "}" * DEPTH + "\n",
        NESTED,
    ),
    "YAML block mappings": (
        "block.yaml",
        "".join(" " * n + "a:\n" for n in range(600)) + " " * 600 + "1\n",
        NESTED,
    ),
    "YAML alias bomb": (
        "bomb.yaml",
        "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]\n" for n in range(1, 10)),
        "YAML aliases expand the document",
    ),
    "JSON integer of 100,000 digits": (
        "int.json",
        '{"profile": ' + "9" * 100_000 + "}",
        "an integer of more than",
    ),
    "YAML integer of 100,000 digits": (
        "int.yaml",
        "profile: " + "9" * 100_000 + "\n",
        "an integer of more than",
    ),
    "JSON NaN": ("nan.json", '{"profile": NaN}', "NaN is not valid JSON"),
    "JSON Infinity": ("inf.json", '{"profile": -Infinity}', "Infinity is not valid JSON"),
    "JSON number past float range": ("big.json", '{"profile": 1e999}', "non-finite number"),
    "YAML NaN": ("nan.yaml", "profile: .nan\n", "non-finite number"),
    "JSON duplicate keys": ("dup.json", '{"profile": "a", "profile": "b"}', "duplicate key"),
    "bytes that are not UTF-8": ("bytes.json", b'{"profile": "\xff\xfe\x00"}', "not UTF-8"),
    "a 5 MB string": (
        "long.json",
        '{"profile": "' + "x" * (5 * 1024 * 1024) + '"}',
        f"larger than the {MAX_DOCUMENT_BYTES:,}-byte limit",
    ),
}


def zeroshot(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    ran = subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        errors="backslashreplace",
    )
    assert time.monotonic() - started < DEADLINE_S
    assert "Traceback" not in ran.stdout + ran.stderr, ran.stderr[-3000:]
    assert "internal error" not in ran.stderr, ran.stderr[-3000:]
    return ran


def _write(folder: Path, name: str, contents: str | bytes) -> Path:
    path = folder / name
    if isinstance(contents, bytes):
        path.write_bytes(contents)
    else:
        path.write_text(contents)
    return path


@pytest.mark.parametrize("case", list(REFUSED))
def test_validate_rejects_the_attack_with_a_diagnostic_naming_the_file(
    tmp_path: Path, case: str
) -> None:
    name, contents, words = REFUSED[case]
    path = _write(tmp_path, name, contents)
    ran = zeroshot(tmp_path, "validate", str(path))
    assert ran.returncode == 1, (ran.returncode, ran.stdout[-500:], ran.stderr[-500:])
    assert ran.stderr == ""
    head, message, *_ = ran.stdout.splitlines()
    assert head == "error: invalid_graph_shape at (document)"
    assert str(path) in message and re.search(words, message) and len(message) < 400, message
    as_json = zeroshot(tmp_path, "validate", str(path), "--json")
    assert as_json.returncode == 1
    [diagnostic] = json.loads(as_json.stdout)["diagnostics"]
    assert diagnostic["code"] == "invalid_graph_shape" and diagnostic["path"] == []
    # The Python API refuses the same file the same way.
    with pytest.raises(DocumentError, match=words):
        load_document(path)


@pytest.mark.parametrize(
    "case", ["JSON objects", "YAML flow lists", "YAML integer of 100,000 digits"]
)
def test_run_rejects_the_same_graph_files_as_validate_before_starting_anything(
    tmp_path: Path, case: str
) -> None:
    name, contents, words = REFUSED[case]
    path = _write(tmp_path, name, contents)
    ran = zeroshot(tmp_path, "run", str(path), "--input", "{}")
    assert ran.returncode == 1, (ran.returncode, ran.stdout[-500:], ran.stderr[-500:])
    assert ran.stdout.startswith("error: invalid_graph_shape at (document)")
    assert re.search(words, ran.stdout), ran.stdout[-500:]
    assert not (tmp_path / ".zeroshot" / "ledger.db").exists()


def test_a_graph_nested_within_the_reading_limit_ends_in_located_diagnostics(
    tmp_path: Path,
) -> None:
    """250 levels of array types (within the 256 the reader allows): read, then rejected
    by the shape check (exit 1) with a code and the path down to the nesting, in text and
    in ``--json``."""
    path = _write(tmp_path, "deep-type.json", _deep_type_graph(MAX_NESTING - 6))
    ran = zeroshot(tmp_path, "validate", str(path))
    assert ran.returncode == 1, ran.stderr[-500:]
    assert "invalid_graph_shape at " in ran.stdout
    assert "› deep › type › items › items" in ran.stdout and "nested too deeply" in ran.stdout
    as_json = zeroshot(tmp_path, "validate", str(path), "--json")
    assert as_json.returncode == 1
    envelope = json.loads(as_json.stdout)
    assert envelope["status"] == "rejected"
    codes = {d["code"] for d in envelope["diagnostics"]}
    assert codes == {"invalid_graph_shape"}
    assert all(
        d["path"] and d["path"][0]["name"] in ("initialInput", "root")
        for d in envelope["diagnostics"]
    )


Deep = Callable[[int], Any]
DEEP_VALUES: dict[str, Deep] = {
    "lists": lambda n: _nest(n, lambda inner: [inner], []),
    "objects": lambda n: _nest(n, lambda inner: {"a": inner}, 1),
    "graph root": lambda n: {
        "profile": "openengine.graph.full/v1",
        "root": _nest(n, lambda inner: {"kind": "seq", "children": [inner]}, {}),
    },
}


def _nest(depth: int, wrap: Callable[[Any], Any], leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = wrap(value)
    return value


@pytest.mark.parametrize("case", list(DEEP_VALUES))
def test_the_python_api_turns_deep_documents_into_diagnostics(case: str) -> None:
    """A document built in Python never went through the reader: parsing and verifying it
    still end in an ``invalid_graph_shape`` diagnostic, not a RecursionError."""
    document = DEEP_VALUES[case](DEPTH)
    parsed = parse_graph(document)
    assert not parsed.ok
    assert {d.code for d in parsed.diagnostics} == {"invalid_graph_shape"}
    verified = verify_document(document, None)
    assert verified.envelope()["status"] == "rejected"
    assert {d.code for d in verified.diagnostics} == {"invalid_graph_shape"}


def test_the_depth_check_is_fast_and_runs_before_any_parser() -> None:
    text = "[" * (MAX_DOCUMENT_BYTES // 2 - 1) + "]" * (MAX_DOCUMENT_BYTES // 2 - 1)
    started = time.monotonic()
    with pytest.raises(DocumentError, match=NESTED):
        loads_document(text)
    assert time.monotonic() - started < 5
    # Nesting up to the limit is read as usual.
    assert loads_document("[" * MAX_NESTING + "]" * MAX_NESTING) is not None
