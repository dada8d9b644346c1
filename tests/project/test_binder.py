"""Binder's environment: pinned, within the project's declared ranges, and resolvable.

repo2docker itself needs a Docker engine, which these machines lack; what can be checked
here is that the pins resolve together (pip's resolver, dry run), that they satisfy the
ranges in pyproject.toml, and that postBuild installs the project over them without
re-resolving anything.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib

import pytest
from conftest import PROJECT_ROOT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

BINDER = PROJECT_ROOT / "binder"


def pins() -> dict[str, str]:
    lines = (BINDER / "requirements.txt").read_text().splitlines()
    requirements = [Requirement(x) for x in lines if x.strip() and not x.startswith("#")]
    for requirement in requirements:
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", f"{requirement} is not pinned exactly"
    return {canonicalize_name(r.name): next(iter(r.specifier)).version for r in requirements}


def test_every_runtime_and_lab_dependency_is_pinned_within_its_declared_range() -> None:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    declared = [
        Requirement(x) for x in [*project["dependencies"], *project["optional-dependencies"]["lab"]]
    ]
    pinned = pins()
    for requirement in declared:
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"binder/requirements.txt does not pin {requirement.name}"
        assert requirement.specifier.contains(pinned[name]), (
            f"binder pins {name}=={pinned[name]}, outside pyproject's {requirement}"
        )


@pytest.mark.slow  # pip's resolver over the binder pins
def test_the_pins_resolve_together() -> None:
    resolved = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            "-",
            "-r",
            str(BINDER / "requirements.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert resolved.returncode == 0, resolved.stderr
    chosen = {
        canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
        for item in json.loads(resolved.stdout)["install"]
    }
    assert {name: chosen.get(name) for name in pins()} == pins()


def test_post_build_is_minimal_and_installs_only_the_project() -> None:
    post_build = BINDER / "postBuild"
    assert os.access(post_build, os.X_OK)
    commands = [
        x
        for x in post_build.read_text().splitlines()
        if x.strip() and not x.startswith(("#", "set "))
    ]
    assert commands == ["python -m pip install --no-deps --no-cache-dir -e .", "mkdir -p .zeroshot"]
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"


def test_the_readme_badge_opens_the_quickstart() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    (badge,) = re.findall(r"\(https://mybinder\.org/v2/[^)]+\)", readme)
    assert badge.endswith("?urlpath=lab/tree/notebooks/quickstart.ipynb)")
    assert (PROJECT_ROOT / "notebooks" / "quickstart.ipynb").is_file()
