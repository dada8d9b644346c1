"""One notebook of a batch, executed with papermill in a process of its own (a child of a
local batch, ``python -m zeroshot_kernel.batch.execute``, or a dask worker), returning a
plain, picklable outcome.

A kernel that fails to start is retried with backoff (:mod:`zeroshot_kernel.retry`'s
policy): under load, kernel starts race (the "Kernel didn't respond" of many parallel
papermills). A failure after the first cell started is the notebook's own and is not
retried: a cell error, a notebook past its timeout, a kernel that died or was killed. It
fails only its item, with the reason in words.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zeroshot_kernel.batch.kernels import private_kernels
from zeroshot_kernel.batch.results import read_results
from zeroshot_kernel.processes import PIPE, spawn
from zeroshot_kernel.retry import RetriesExhausted, RetryPolicy, retry_sync

START_TIMEOUT_S = 120.0
BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
MAX_REASON_CHARS = 500
"""The longest line of a notebook's own output a failed item's reason quotes."""


@dataclass(frozen=True)
class ItemOutcome:
    status: str
    duration_s: float
    output: str
    error: str | None = None
    results: dict[str, Any] | None = None
    start_attempts: int = 1


def execute_item(
    notebook: str,
    output: str,
    parameters: dict[str, Any],
    *,
    kernel_name: str | None = None,
    start_retries: int = 3,
    cwd: str | None = None,
) -> ItemOutcome:
    """Execute ``notebook`` with ``parameters`` into ``output``; never raises for the
    notebook's failures (they are the outcome). Its time limit is the caller's
    (:func:`execute_in_child`)."""
    import papermill

    started = time.monotonic()
    attempts = 0

    def attempt() -> None:
        nonlocal attempts
        attempts += 1
        with private_kernels() as config:
            papermill.execute_notebook(
                notebook,
                output,
                parameters=parameters,
                kernel_name=kernel_name,
                start_timeout=START_TIMEOUT_S,
                progress_bar=False,
                log_output=False,
                cwd=cwd,
                config=config,
            )

    def kernel_did_not_start(problem: BaseException) -> bool:
        return (
            isinstance(problem, Exception)
            and not _file_problem(problem)
            and not _any_cell_started(_executed_cells(output))
        )

    # The budget only bounds the retries: each start has its own timeout, and the whole
    # notebook the caller's.
    policy = RetryPolicy(
        attempts=start_retries,
        first_delay_s=BACKOFF_S,
        max_delay_s=MAX_BACKOFF_S,
        budget_s=start_retries * START_TIMEOUT_S,
    )
    try:
        retry_sync(attempt, policy, transient_error=kernel_did_not_start)
    except Exception as failure:
        problem = failure.error if isinstance(failure, RetriesExhausted) else failure
        assert isinstance(problem, Exception)
        return ItemOutcome(
            "failed",
            time.monotonic() - started,
            output,
            _reason(problem, output),
            _results(output),
            attempts,
        )
    return ItemOutcome(
        "succeeded", time.monotonic() - started, output, None, _results(output), attempts
    )


def _executed_cells(output: str) -> list[dict[str, Any]]:
    """The cells of the executed notebook papermill wrote (none when it cannot be read)."""
    try:
        document = json.loads(Path(output).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    cells = document.get("cells") if isinstance(document, dict) else None
    return [cell for cell in cells if isinstance(cell, dict)] if isinstance(cells, list) else []


def _any_cell_started(cells: list[dict[str, Any]]) -> bool:
    """Whether papermill began executing a cell (it stamps each cell's start; a kernel that
    never started leaves every stamp empty, whatever statuses the clean-up wrote)."""
    return any(cell.get("metadata", {}).get("papermill", {}).get("start_time") for cell in cells)


def _last_error_line(cells: list[dict[str, Any]], execution_count: int | None) -> str:
    """What a cell that failed without an exception said: the last ``error:`` line cell
    ``execution_count`` wrote to stderr (a ``%zeroshot`` command's), else its last line."""
    for cell in cells:
        if cell.get("execution_count") != execution_count:
            continue
        lines = [
            line.strip()
            for output in cell.get("outputs", [])
            if isinstance(output, dict) and output.get("name") == "stderr"
            for line in "".join(output.get("text", "")).splitlines()
            if line.strip()
        ]
        errors = [line for line in lines if line.startswith("error:")] or lines
        return errors[-1].removeprefix("error: ")[:MAX_REASON_CHARS] if errors else ""
    return ""


def _results(output: str) -> dict[str, Any] | None:
    try:
        return read_results(output) or None
    except (OSError, ValueError):
        return None


def _file_problem(problem: BaseException) -> bool:
    """A file that cannot be read or written (the notebook, its output): no retry helps,
    and the kernel is not to blame."""
    return isinstance(problem, OSError) and problem.filename is not None


def _reason(problem: Exception, output: str) -> str:
    from nbclient.exceptions import DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    cells = _executed_cells(output)
    if isinstance(problem, PapermillExecutionError):
        said = problem.evalue or _last_error_line(cells, problem.exec_count)
        if problem.ename == "CellExecutionError" and said:  # no exception: its own words
            return f"cell {problem.exec_count} failed: {said}"
        return f"cell {problem.exec_count} raised {problem.ename}: {said}"
    if isinstance(problem, DeadKernelError):
        return "the kernel died while a cell ran (killed, or out of memory)"
    if isinstance(problem, OSError) and _file_problem(problem):
        return f"cannot use the file {problem.filename}: {problem.strerror or problem}"
    if not _any_cell_started(cells):
        return f"the kernel did not start: {type(problem).__name__}: {problem}"
    return f"{type(problem).__name__}: {problem}"


def execute_in_child(
    notebook: str,
    output: str,
    parameters: dict[str, Any],
    timeout_s: float | None = None,
    **options: Any,
) -> ItemOutcome:
    """``execute_item`` in a new Python process: a batch's unit of isolation (a crash, a
    leak or a hung kernel of one notebook stays in its process). ``timeout_s`` is the
    whole notebook's budget: past it the process is killed, and its kernel, which watches
    its parent, exits with it."""
    request = json.dumps(
        {"notebook": notebook, "output": output, "parameters": parameters, "options": options}
    )
    started = time.monotonic()
    # Not a session of its own: a Ctrl-C of a local batch reaches it as before.
    child = spawn(
        [sys.executable, "-m", "zeroshot_kernel.batch.execute"],
        stdin=PIPE,
        stdout=PIPE,
        stderr=PIPE,
        text=True,
        own_group=False,
    )
    try:
        stdout, stderr = child.popen.communicate(request, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        child.terminate()
        child.popen.communicate()
        return ItemOutcome(
            "failed",
            time.monotonic() - started,
            output,
            f"the notebook ran past its {timeout_s:g} s timeout; its process "
            "and kernel were stopped",
            _results(output),
        )
    lines = stdout.strip().splitlines()
    try:
        return ItemOutcome(**json.loads(lines[-1]))
    except (IndexError, ValueError, TypeError):
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        return ItemOutcome(
            "failed",
            time.monotonic() - started,
            output,
            f"the process executing it exited with {child.returncode}: {tail}",
        )


def skip_iri_grammar() -> None:
    """Keep jsonschema from compiling its IRI grammar when papermill imports it: about
    1.7 s of CPU in every item's process (jsonschema issue 1428, rfc3987-syntax builds an
    Earley parser at import) for a string format no notebook schema uses. Only for a
    process that validates notebooks and nothing else: it turns the ``iri`` formats off."""
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]


def main() -> None:
    skip_iri_grammar()
    request = json.loads(sys.stdin.read())
    outcome = execute_item(
        request["notebook"], request["output"], request["parameters"], **request["options"]
    )
    print(json.dumps(dataclasses.asdict(outcome)))


if __name__ == "__main__":
    main()
