"""``make demo``: a headless auto-research run with the embedded agents, then a report.

Runs the bundled ``svc-digits`` task (tuning an SVM on scikit-learn's digits) for ten
reviewed rounds in a fresh workspace, prints each round as the reviewer closes it, then
executes ``notebooks/report.ipynb`` with papermill and exports it to HTML.

    python -m zeroshot_kernel.demo [--task NAME] [--iterations N] [--out DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zeroshot-demo", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--task", default="svc-digits", help="bundled task under research_templates/"
    )
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--out", type=Path, default=PROJECT / "demo-output")
    args = parser.parse_args(argv)

    from zeroshot_kernel.auto_research.commands import round_line
    from zeroshot_kernel.auto_research.views import ResearchViewBuilder
    from zeroshot_kernel.client import Client
    from zeroshot_kernel.templates import TemplateOptions, expand_template

    workspace = args.out.resolve()
    if workspace.exists():
        shutil.rmtree(workspace)
    (workspace / ".zeroshot").mkdir(parents=True)
    shutil.copytree(PROJECT / "research_templates" / args.task, workspace / args.task)

    client = Client(workspace=str(workspace))
    expansion = expand_template(
        "auto-research", TemplateOptions(task=args.task, iterations=args.iterations)
    )
    started = time.monotonic()
    run = client.submit(
        expansion.graph,
        input=expansion.input,
        runtime=expansion.runtime,
        title=f"demo: {args.task}",
    )
    print(
        f"auto-research on {args.task}: run {run.id}, {args.iterations} rounds, "
        f"ledger {client.display_url}"
    )
    builder, shown, cursor = ResearchViewBuilder(), 0, None
    while True:
        snapshot, tail = client.snapshot_and_tail(run.id, cursor)
        cursor = snapshot.cursor
        view = builder.feed(event for _, event in tail).view()
        for round_view in view.rounds[shown:]:
            print(round_line(round_view), flush=True)
        shown = len(view.rounds)
        if view.terminal is not None:
            break
        time.sleep(0.3)
    elapsed = time.monotonic() - started
    terminal = view.terminal
    print(f"finished in {elapsed:.0f} s: {terminal.status}")
    if view.incumbent is not None:
        metric = view.incumbent.metric
        value = "n/a (no successful measurement)" if metric is None else f"{metric:.6g}"
        print(
            f"incumbent {view.incumbent.candidate_id}: metric {value} "
            f"(adopted in round {view.incumbent.round}); plateau {view.plateau} round(s)"
        )

    report = write_report(client.url, run.id, workspace)
    print(f"report: {report}")
    print(f"records: {workspace / '.zeroshot' / 'research'}")
    return 0 if terminal.status == "succeeded" else 1


def write_report(ledger_url: str, run_id: str, out: Path) -> Path:
    """Execute the report notebook for ``run_id`` with papermill and export it to HTML."""
    import nbformat
    import papermill
    from nbconvert import HTMLExporter

    from zeroshot_kernel.batch.kernels import private_kernels

    executed = out / "report.ipynb"
    with private_kernels() as config:
        papermill.execute_notebook(
            str(PROJECT / "notebooks" / "report.ipynb"),
            str(executed),
            parameters={"ledger": ledger_url, "run_id": run_id},
            kernel_name="python3",
            cwd=str(out),
            progress_bar=False,
            config=config,
        )
    notebook = nbformat.read(executed, 4)  # type: ignore[no-untyped-call]
    exporter = HTMLExporter(exclude_input=True)  # type: ignore[no-untyped-call]
    html, _ = exporter.from_notebook_node(notebook)
    target = out / "report.html"
    target.write_text(html, encoding="utf-8")
    return target


if __name__ == "__main__":
    sys.exit(main())
