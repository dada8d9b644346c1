"""The process that executes one notebook of a batch starts lean: papermill's import
pulls in jsonschema, which would compile an IRI grammar no notebook schema uses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_an_item_process_imports_papermill_without_the_iri_grammar(tmp_path: Path) -> None:
    request = {
        "notebook": str(tmp_path / "missing.ipynb"),
        "output": str(tmp_path / "out.ipynb"),
        "parameters": {},
        "options": {},
    }
    child = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "zeroshot_kernel.batch.execute"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in child.stderr.splitlines()}
    assert {"papermill", "nbformat", "jsonschema"} <= imported, child.stderr[-2000:]
    # "rfc3987_syntax" itself is listed: the refused import. Its grammar never loads.
    assert not {"lark", "rfc3987_syntax.syntax_helpers"} & imported
    outcome = json.loads(child.stdout.strip().splitlines()[-1])
    assert outcome["status"] == "failed"
    assert "missing.ipynb" in outcome["error"]
