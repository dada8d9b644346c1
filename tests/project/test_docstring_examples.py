"""The examples in docstrings run as written (``>>>`` lines, through ``doctest``)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("zeroshot_kernel", "widgets/zeroshot_widgets")


def modules_with_examples() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if ">>> " in path.read_text(encoding="utf-8"):
                relative = path.relative_to(ROOT / package).with_suffix("")
                found.append(".".join([Path(package).name, *relative.parts]))
    return found


@pytest.mark.parametrize("module", modules_with_examples())
def test_docstring_examples_hold(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module.removesuffix(".__init__")))
    assert result.attempted > 0 and result.failed == 0, result
