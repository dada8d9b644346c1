"""Packaging promises: the engine never drags in UI libraries; the test harness is strict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT

UI_PREFIXES = (
    "ipywidgets",
    "matplotlib",
    "jupyter",
    "jupyterlab",
    "notebook",
    "IPython",
    "ipykernel",
    "nbclient",
    "papermill",
)


def test_importing_the_engine_imports_no_ui_or_jupyter_package() -> None:
    code = textwrap.dedent(
        f"""
        import sys
        import zeroshot_kernel, zeroshot_kernel.cli, zeroshot_kernel.contract.parse
        import zeroshot_kernel.batch, zeroshot_kernel.auto_research
        bad = sorted(m for m in sys.modules if m.split('.')[0] in {UI_PREFIXES!r})
        print(','.join(bad))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_both_import_packages_are_installed() -> None:
    import zeroshot_widgets

    import zeroshot_kernel

    assert Path(zeroshot_kernel.__file__).parent == PROJECT_ROOT / "zeroshot_kernel"
    assert Path(zeroshot_widgets.__file__).parent == PROJECT_ROOT / "widgets" / "zeroshot_widgets"


def _pytest_in(directory: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    test = directory / "test_needs_conformance.py"
    test.write_text("def test_uses(conformance):\n    assert conformance.is_dir()\n")
    (directory / "conftest.py").write_text(
        "import importlib.util\n"
        "spec = importlib.util.spec_from_file_location("
        f"'support', {str(PROJECT_ROOT / 'tests' / 'conftest.py')!r})\n"
        "support = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(support)\n"
        "conformance = support.conformance\n"
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(test)],
        capture_output=True,
        text=True,
        cwd=directory,
        env=env,
        timeout=120,
    )


@pytest.mark.slow  # a pytest session in a child process
def test_missing_conformance_skips_loudly_and_fails_under_strict(tmp_path: Path) -> None:
    env = {**os.environ, "ZEROSHOT_CONFORMANCE_DIR": str(tmp_path / "nowhere")}
    env.pop("ZEROSHOT_STRICT", None)
    relaxed = _pytest_in(tmp_path, env)
    assert relaxed.returncode == 0
    assert "MISSING REAL COMPONENT" in relaxed.stdout and "skipped" in relaxed.stdout

    strict = _pytest_in(tmp_path, {**env, "ZEROSHOT_STRICT": "1"})
    assert strict.returncode == 1
    assert "ZEROSHOT_STRICT=1" in strict.stdout


def test_the_console_script_is_installed_and_validates_the_example() -> None:
    script = Path(sys.executable).with_name("zeroshot")
    assert script.is_file(), f"no console script beside {sys.executable}"
    example = PROJECT_ROOT / "examples" / "headline.yaml"
    done = subprocess.run(
        [str(script), "validate", str(example)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{example}: verified (identity ")
    assert (
        "Usage: zeroshot"
        in subprocess.run(
            [str(script), "--help"], capture_output=True, text=True, timeout=60
        ).stdout
    )


@pytest.mark.slow  # builds a wheel
def test_the_wheel_carries_the_bundled_tasks_and_notebook(tmp_path: Path) -> None:
    """Built as pip builds it (isolated, hatchling from the registry), then imported from
    the unpacked wheel instead of the source tree."""
    import zipfile

    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(tmp_path),
            str(PROJECT_ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"zeroshot_kernel/py.typed", "zeroshot_widgets/py.typed"} <= names  # typed package
    # the server extension is enabled on install (the Lab front end reads ledgers through
    # it); no global settings override (saved widget state grew every notebook)
    (enabling,) = [n for n in names if n.endswith("jupyter_server_config.d/zeroshot_kernel.json")]
    assert enabling.split(".data/data/", 1)[1] == (
        "etc/jupyter/jupyter_server_config.d/zeroshot_kernel.json"
    )
    config = json.loads(zipfile.ZipFile(wheel).read(enabling))
    assert config == {"ServerApp": {"jpserver_extensions": {"zeroshot_kernel.lab_server": True}}}
    assert not [n for n in names if "overrides.d" in n]
    assert "zeroshot_kernel/lab_server/handlers.py" in names
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from zeroshot_kernel.auto_research.task import BUNDLED_TASKS, bundled_tasks;"
        "print(BUNDLED_TASKS); print(bundled_tasks());"
        "print((BUNDLED_TASKS / 'research.ipynb').is_file())"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code, str(unpacked)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=True,
    ).stdout.splitlines()
    assert shown == [
        str(unpacked / "zeroshot_kernel" / "research_templates"),
        "['branin', 'mlp-gpu', 'quadrature', 'rosenbrock', 'svc-digits']",
        "True",
    ]
