"""The documentation site: it builds with warnings as errors, and its examples run.

The site (``mkdocs.yml``, ``docs/``) is built strictly into a temporary folder: a broken
link or anchor, a page missing from the navigation, a docstring reference that does not
resolve or a generated page that fails is a failure, with MkDocs' own words.

An example is runnable when the line before its fence is ``<!-- run -->`` (in ``docs/`` and
in ``README.md``). A ``console`` block runs each ``$ `` line with bash (a trailing ``\\``
continues it; the other lines are output, shown to readers and not run); a ``python`` block
runs as a script. The blocks of one page run in order, in one fresh workspace holding a copy
of ``examples/`` and ``research_templates/``, with the embedded default: no API key, no
ledger or target from the environment. Each must succeed within its time limit.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# slow: builds the docs site (mkdocs) and runs its examples in fresh workspaces
pytestmark = pytest.mark.slow


def _project_root() -> Path:
    here = Path(__file__).resolve().parents[1]
    while not (here / "mkdocs.yml").is_file():
        if here.parent == here:
            raise RuntimeError("no mkdocs.yml above the tests")
        here = here.parent
    return here


ROOT = _project_root()
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
BUILD_TIMEOUT_S = 300
BLOCK_TIMEOUT_S = 240
MARKER = "<!-- run -->"
# what the examples must not inherit: credentials, and a ledger, target or box chosen by
# the caller's shell
SCRUBBED = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GH_TOKEN")


def _strict() -> bool:
    return os.environ.get("ZEROSHOT_STRICT", "") not in ("", "0", "false")


def _require_mkdocs() -> None:
    try:
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError as missing:
        message = (
            f"MISSING REAL COMPONENT: the docs extra ({missing.name}): pip install -e '.[docs]'"
        )
        if _strict():
            pytest.fail(message)
        pytest.skip(message)


# --- the examples -----------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    body: str

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def examples(page: Path) -> list[Example]:
    """The runnable blocks of ``page``, in order. A marker inside a fence (an example of
    the convention itself) does not count."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    fence: str | None = None
    marked = False
    start = 0
    language = ""
    body: list[str] = []
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if fence is None:
            opening = re.match(r"(`{3,}|~{3,})\s*([\w-]*)", stripped)
            if opening:
                fence, language, start, body = opening.group(1), opening.group(2), number, []
                continue
            if stripped == MARKER:
                marked = True
            elif stripped:
                marked = False
            continue
        if stripped.startswith(fence) and stripped.strip(fence[0]) == "":
            if marked:
                found.append(Example(page, start, language, "\n".join(body)))
            fence, marked = None, False
            continue
        body.append(line)
    return found


def console_script(body: str) -> str:
    """The ``$ `` commands of a console block as one bash script that stops at a failure.
    A command continues on the next line after a trailing ``\\``, and a here-document
    (``<<'END'``) takes the lines up to its terminator."""
    commands: list[str] = []
    continuing = False
    heredoc: str | None = None
    for line in body.splitlines():
        if heredoc is not None:
            commands[-1] += "\n" + line
            if line == heredoc:
                heredoc = None
            continue
        if continuing:
            commands[-1] += "\n" + line
        elif line.startswith("$ "):
            commands.append(line[2:])
        else:
            continue
        continuing = line.rstrip().endswith("\\")
        opened = re.search(r"<<-?\s*(['\"]?)(\w+)\1", line)
        if opened:
            heredoc = opened.group(2)
    if heredoc is not None:
        raise ValueError(f"a here-document is never closed (expected a line {heredoc!r})")
    return "set -euo pipefail\n" + "\n".join(commands) + "\n"


RUNNABLE = [page for page in PAGES if examples(page)]


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / ".zeroshot").mkdir()
    for folder in ("examples", "research_templates"):
        shutil.copytree(
            ROOT / folder, workspace / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    return workspace


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in SCRUBBED and not key.startswith(("ZEROSHOT_LEDGER", "ZEROSHOT_TARGET"))
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    env.pop("ZEROSHOT_SANDBOX", None)
    env.pop("PYTHONPATH", None)
    return env


def test_the_convention_finds_blocks_and_ignores_quoted_markers() -> None:
    development = examples(DOCS / "development.md")
    assert development == [], "the marker quoted inside a fence must not run"
    readme = examples(ROOT / "README.md")
    assert {example.language for example in readme} == {"console", "python"}
    script = console_script("$ zeroshot run a \\\n      --input b\noutput line\n$ zeroshot list\n")
    assert script.splitlines()[1:] == ["zeroshot run a \\", "      --input b", "zeroshot list"]
    script = console_script("$ cat > f <<'END'\n$ not a command\nEND\nan output line\n$ cat f\n")
    assert script.splitlines()[1:] == ["cat > f <<'END'", "$ not a command", "END", "cat f"]


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda page: str(page.relative_to(ROOT)))
def test_the_examples_run(page: Path, tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    env = _environment(tmp_path)
    for index, example in enumerate(examples(page)):
        if example.language == "console":
            script = console_script(example.body)
            assert script.count("\n") > 1, f"{example.where()}: a console block without a $ line"
            command = ["bash", "-c", script]
        elif example.language == "python":
            script = tmp_path / f"example_{index}.py"
            script.write_text(example.body + "\n", encoding="utf-8")
            command = [sys.executable, str(script)]
        else:
            pytest.fail(f"{example.where()}: a runnable block must be console or python")
        try:
            done = subprocess.run(
                command,
                cwd=workspace,
                env=env,
                capture_output=True,
                text=True,
                timeout=BLOCK_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as late:
            pytest.fail(
                f"{example.where()}: still running after {BLOCK_TIMEOUT_S} s\n{late.stdout}"
            )
        assert done.returncode == 0, (
            f"{example.where()} exited {done.returncode}\n--- the block\n{example.body}\n"
            f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
        )


# --- the commands the pages name --------------------------------------------------------


def console_commands(page: Path) -> list[tuple[int, str]]:
    """Every ``zeroshot`` command line of the page's console blocks (runnable or not), with
    its line number; continuation lines joined."""
    found: list[tuple[int, str]] = []
    fence: str | None = None
    language = ""
    pending: tuple[int, str] | None = None
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        if fence is None:
            opening = re.match(r"(`{3,})\s*([\w-]*)", stripped)
            if opening:
                fence, language = opening.group(1), opening.group(2)
            continue
        if stripped == fence:
            fence = None
            continue
        if language != "console":
            continue
        if pending is not None:
            pending = (pending[0], pending[1][:-1] + " " + stripped)
        elif re.match(r"\$ (\w+=\S+\s+)*zeroshot\s", stripped):
            pending = (number, stripped[2:])
        if pending is not None and not pending[1].endswith("\\"):
            found.append(pending)
            pending = None
    return found


SHELL_BREAKS = ("|", ">", ">>", "&&", ";", "&", "2>&1")


def unknown_words(root: Any, name: str, words: list[str]) -> str | None:
    """Why ``name words...`` is not a command line ``root`` (a click command) accepts: an
    unknown sub-command or option, or None. Groups resolve as they do when run
    (``zeroshot batch NOTEBOOK`` is ``zeroshot batch run NOTEBOOK``)."""
    command, path = root, [name]
    with root.context_class(root, info_name=name) as ctx:
        while words and hasattr(command, "resolve_command"):
            try:
                found, sub, words = command.resolve_command(ctx, words)
            except Exception:
                break
            if sub is None:
                break
            command, path = sub, [*path, found or "?"]
    if hasattr(command, "resolve_command") and words and not words[0].startswith("-"):
        return f"{' '.join(path)} has no command {words[0]!r}"
    names = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    for word in words:
        if word in SHELL_BREAKS:
            break
        option = word.split("=", 1)[0]
        if option.startswith("-") and option != "-" and option not in {*names, "--help"}:
            return f"{' '.join(path)} has no option {option}"
    return None


def magic_lines(page: Path) -> list[tuple[int, str]]:
    """Every ``%zeroshot`` line of the page: in code blocks and in inline code."""
    found = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for match in re.finditer(r"(?:^|`)%zeroshot ([^`#\n]*)", line.strip()):
            found.append((number, match.group(1).strip()))
    return found


def test_every_documented_command_and_option_exists() -> None:
    """What the pages tell readers to type is what ``zeroshot --help`` offers: each
    ``zeroshot`` line's sub-commands and options are read from the typer app itself, and
    each ``%zeroshot`` magic's from the magics' own app."""
    import shlex

    import typer

    from zeroshot_kernel.cli import app

    root = typer.main.get_command(app)
    problems: list[str] = []
    checked = 0
    for page in PAGES:
        for number, line in console_commands(page):
            words = shlex.split(line.split(" # ")[0], posix=True)
            problem = unknown_words(root, "zeroshot", words[words.index("zeroshot") + 1 :])
            if problem:
                problems.append(f"{page.relative_to(ROOT)}:{number}: {problem}")
            checked += 1
    assert checked > 50
    magics = pytest.importorskip("zeroshot_kernel.magics", reason="the magics need IPython")
    line_root = typer.main.get_command(magics.line_app)
    for page in PAGES:
        for number, line in magic_lines(page):
            words = [
                w for w in shlex.split(line) if w not in ("...", "…") and not w.startswith("[")
            ]
            words = [w.rstrip("]") for w in words]
            problem = unknown_words(line_root, "%zeroshot", words)
            if problem:
                problems.append(f"{page.relative_to(ROOT)}:{number}: {problem}")
            checked += 1
    assert problems == [], "\n".join(problems)


def test_the_api_reference_covers_the_public_face() -> None:
    """Every name ``zeroshot_kernel`` and ``zeroshot_widgets`` export has its entry in the
    API reference (the errors' families through ``zeroshot_kernel.exceptions``)."""
    import zeroshot_widgets

    import zeroshot_kernel
    import zeroshot_kernel.exceptions

    reference = "".join(
        (DOCS / "reference" / page).read_text(encoding="utf-8") for page in ("api.md", "errors.md")
    )
    documented = set(re.findall(r"^::: ([\w.]+)", reference, re.MULTILINE))
    if "zeroshot_kernel.exceptions" in documented:
        documented |= {f"zeroshot_kernel.{name}" for name in zeroshot_kernel.exceptions.__all__}
    exported = {f"zeroshot_kernel.{name}" for name in zeroshot_kernel.__all__}
    exported |= {f"zeroshot_widgets.{name}" for name in zeroshot_widgets.__all__}
    assert sorted(exported - documented) == []


# --- the site ---------------------------------------------------------------------------


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    _require_mkdocs()
    site = tmp_path / "site"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(site),
        ],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    warnings = [line for line in output.splitlines() if re.match(r"\s*(WARNING|ERROR)\b", line)]
    assert warnings == [], "\n".join(warnings)
    # the generated pages are there and hold what they are generated from
    cli = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    for command in ("zeroshot research run", "zeroshot batch", "zeroshot change run"):
        assert command in cli
    assert "--iterations" in cli and "--parallel" in cli
    api = (site / "reference" / "api.html").read_text(encoding="utf-8")
    assert 'id="zeroshot_kernel.Client"' in api and "submit" in api
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert (site / "tutorials" / f"{notebook.stem}.html").is_file(), notebook.name
    assert "B1" in (site / "benchmarks.html").read_text(encoding="utf-8")
    # nothing that reaches out: no web fonts, no CDN
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "fonts.googleapis.com" not in index and "fonts.gstatic.com" not in index
