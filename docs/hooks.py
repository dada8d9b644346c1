"""MkDocs hooks: pages generated from the project itself at build time.

- ``reference/cli.md``: every command, argument and option of the ``zeroshot`` command,
  read from the typer app (``typer.main.get_command``) and its click parameters, so the page
  cannot drift from ``zeroshot --help``.
- ``tutorials/<name>.md``: the notebooks of ``notebooks/``, their markdown and code cells as
  they are committed (not executed: the notebooks test runs them).

Nothing here touches the network, and nothing is written into ``docs/``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
CLI_PAGE = "reference/cli.md"


# --- the CLI reference ------------------------------------------------------------------


def _help_markdown(text: str) -> str:
    """Click help text as markdown: paragraphs stay paragraphs; a block whose lines are
    indented (click's examples) becomes a console block; ``\\b`` markers are dropped."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text.replace("\b\n", "").replace("\b", "").strip()):
        lines = block.splitlines()
        head: list[str] = []
        while lines and not lines[0].startswith((" ", "\t")):
            head.append(lines.pop(0))
        if head:
            out.append(" ".join(x.strip() for x in head))
        if lines:
            body = "\n".join(x.strip() for x in lines)
            out.append(f"```console\n{body}\n```")
    return "\n\n".join(out)


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _command_markdown(command: Any, ctx: Any, depth: int) -> list[str]:
    # typer carries its own copy of click: duck typing, never isinstance against click
    path = ctx.command_path
    parts = [f"{'#' * min(depth, 6)} `{path}`", ""]
    if command.help:
        parts += [_help_markdown(command.help), ""]
    usage = " ".join(command.collect_usage_pieces(ctx))
    parts += ["```console", f"$ {path} {usage}".rstrip(), "```", ""]
    rows = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        name, text = record
        kind = param.param_type_name
        name = name.replace("|", "\\|")
        rows.append(f"| `{name}` | {kind} | {_escape(' '.join(text.split()))} |")
    if rows:
        parts += ["| name | kind | meaning |", "| --- | --- | --- |", *rows, ""]
    if hasattr(command, "list_commands"):
        names = command.list_commands(ctx)
        if names:
            parts += ["Commands: " + ", ".join(f"`{n}`" for n in names) + ".", ""]
        for name in names:
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            with type(ctx)(sub, info_name=name, parent=ctx) as sub_ctx:
                parts += _command_markdown(sub, sub_ctx, depth + 1)
    return parts


def cli_reference() -> str:
    import typer

    from zeroshot_kernel.cli import app

    command = typer.main.get_command(app)
    with command.context_class(command, info_name="zeroshot", terminal_width=100) as ctx:
        body = _command_markdown(command, ctx, 2)
    intro = [
        "# Command line reference",
        "",
        "Generated from the `zeroshot` command itself when the site is built: each section",
        "holds what `zeroshot … --help` prints. Every command exits 0 on success, 1 for a",
        "rejected graph or a failed run, 2 for unreadable input, misuse or an unusable ledger,",
        "3 for a run left unfinished because its controller stopped, and 130 when interrupted",
        "([graphs and runs](../guides/graphs-and-runs.md#when-something-goes-wrong)).",
        "",
    ]
    return "\n".join(intro + body)


# --- the tutorials ----------------------------------------------------------------------


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def notebook_markdown(path: Path) -> str:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    language = notebook.get("metadata", {}).get("kernelspec", {}).get("language", "python")
    rel = path.resolve().relative_to(ROOT).as_posix()
    parts: list[str] = []
    for index, cell in enumerate(notebook.get("cells", [])):
        text = _source(cell).rstrip()
        if not text:
            continue
        if cell.get("cell_type") == "markdown":
            parts.append(text)
            if index == 0 and text.startswith("# "):
                parts.append(
                    f'!!! note "The notebook `{rel}`"\n    Shown as committed, without its'
                    f" outputs. Open it with `make lab` (or `jupyter lab {rel}`) and run it"
                    " to see them."
                )
        elif cell.get("cell_type") == "code":
            tags = cell.get("metadata", {}).get("tags", [])
            label = ' title="parameters"' if "parameters" in tags else ""
            parts.append(f"```{language}{label}\n{text}\n```")
    if not parts or not parts[0].startswith("# "):
        parts.insert(0, f"# {path.stem}")
    return "\n\n".join(parts) + "\n"


# --- docstrings ---------------------------------------------------------------------------

_ROLE = re.compile(r":(?:class|meth|func|data|mod|attr|exc|obj):<code>(~?)([^<]*)</code>")


def _role(match: re.Match[str]) -> str:
    target = match.group(2)
    shown = target.rsplit(".", 1)[-1] if match.group(1) else target
    return f"<code>{shown}</code>"


def plain_docstrings(html: str) -> str:
    """The docstrings are written for Sphinx: ``:class:`X``` roles read as ``X``, and an
    ``Example::`` introducing a literal block as ``Example:``."""
    return _ROLE.sub(_role, html).replace("::</p>", ":</p>")


# --- the hooks --------------------------------------------------------------------------


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    if page.file.src_uri.startswith("reference/"):
        return plain_docstrings(html)
    return html


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, CLI_PAGE, content=cli_reference()))
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        files.append(
            File.generated(
                config, f"tutorials/{notebook.stem}.md", content=notebook_markdown(notebook)
            )
        )
    return files
