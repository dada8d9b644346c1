"""Run a batch: many parameterised notebooks, each executed in its own process, on a local
pool or an existing dask.distributed cluster, every item recorded in the ledger as it
starts and ends, so that ``resume`` runs again exactly the items that did not succeed.

Example::

    from zeroshot_kernel.batch import run_batch
    status = run_batch("research_templates/research.ipynb",
                       [{"task": "rosenbrock"}, {"task": "branin"}], output_dir="out")
    status.count("succeeded")
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from zeroshot_kernel.batch.execute import ItemOutcome, execute_in_child
from zeroshot_kernel.batch.notebooks import declared_parameters, read_notebook
from zeroshot_kernel.batch.outputs import (
    check_batch_folder,
    clear_link,
    create_batch_folder,
    output_directory,
)
from zeroshot_kernel.batch.parameters import ParameterError, check_declared, check_sets
from zeroshot_kernel.batch.storage import (
    BatchItem,
    BatchOptions,
    BatchStatus,
    BatchStore,
    new_batch_id,
)
from zeroshot_kernel.dask_scheduler import check_address, connected
from zeroshot_kernel.workspace import find_workspace, ledger_url

STAGGER_S = 0.25
"""Between two kernel starts on a local pool: simultaneous starts race for ports and CPU."""

Progress = Callable[[int], Any]


def open_store(ledger: str | os.PathLike[str] | None = None) -> BatchStore:
    """The batch tables of ``ledger`` (default: the workspace's ledger)."""
    return BatchStore(
        ledger_url(os.fspath(ledger) if ledger is not None else None, find_workspace())
    )


def run_batch(
    notebook: str | os.PathLike[str],
    parameter_sets: Sequence[dict[str, Any]],
    *,
    output_dir: str | os.PathLike[str] = "batch-output",
    workers: int = 2,
    dask: str | None = None,
    timeout_s: float | None = None,
    kernel_name: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    ledger: str | os.PathLike[str] | None = None,
    progress: bool = True,
    allow_outside_workspace: bool = False,
) -> BatchStatus:
    """Record a new batch (:func:`create_batch`) and execute every item of it."""
    _check_workers(workers, dask)
    created = create_batch(
        notebook,
        parameter_sets,
        output_dir=output_dir,
        timeout_s=timeout_s,
        kernel_name=kernel_name,
        cwd=cwd,
        ledger=ledger,
        allow_outside_workspace=allow_outside_workspace,
    )
    with open_store(ledger) as store:
        return _execute(
            store, created.batch_id, None, workers=workers, dask=dask, progress=progress
        )


def create_batch(
    notebook: str | os.PathLike[str],
    parameter_sets: Sequence[dict[str, Any]],
    *,
    output_dir: str | os.PathLike[str] = "batch-output",
    timeout_s: float | None = None,
    kernel_name: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    ledger: str | os.PathLike[str] | None = None,
    allow_outside_workspace: bool = False,
) -> BatchStatus:
    """Record a new batch, ``notebook`` once per parameter set, without executing it
    (:func:`resume_batch` does). Everything is checked first, and nothing is recorded or
    created when a check fails: the notebook (a Jupyter notebook, see
    :mod:`~zeroshot_kernel.batch.notebooks`), every parameter name and value (see
    :mod:`zeroshot_kernel.batch.parameters`), every name against those the notebook's
    parameters cell assigns when it has one, and ``output_dir``, which must lie inside the
    workspace unless ``allow_outside_workspace``. The batch writes its notebooks into a
    new folder of its own, ``<output_dir>/<batch id>``."""
    source, document = read_notebook(notebook)
    if not parameter_sets:
        raise ParameterError("a batch needs at least one parameter set")
    check_sets(parameter_sets)
    declared = declared_parameters(document, kernel_name)
    if declared is not None:
        check_declared(parameter_sets, declared, source.name)
    out = output_directory(output_dir, allow_outside_workspace=allow_outside_workspace)
    options = BatchOptions(
        timeout_s=timeout_s,
        kernel_name=kernel_name,
        cwd=str(Path(cwd).resolve()) if cwd is not None else None,
    )
    batch_id = new_batch_id()
    folder = create_batch_folder(out, batch_id)
    with open_store(ledger) as store:
        store.create(str(source), str(folder), parameter_sets, options, batch_id=batch_id)
        return store.status(batch_id)


def resume_batch(
    batch_id: str,
    *,
    workers: int = 2,
    dask: str | None = None,
    ledger: str | os.PathLike[str] | None = None,
    progress: bool = True,
) -> BatchStatus:
    """Execute again every item of ``batch_id`` that has not succeeded (failed, or left
    pending or running by a batch that was interrupted). Their parameters are checked again
    first: a batch recorded by an older version, or a ledger written by other hands, may
    hold names that are code. They are not checked against the notebook's parameters cell
    again: the batch runs as it was recorded, even if the notebook changed since. The
    batch's folder must still be a folder reached without a link."""
    _check_workers(workers, dask)
    with open_store(ledger) as store:
        status = store.status(batch_id)
        todo = [item for item in status.items if item.status != "succeeded"]
        check_sets([item.parameters for item in todo], f"batch {batch_id}")
        check_batch_folder(status.output_dir)
        return _execute(
            store,
            batch_id,
            [item.index for item in todo],
            workers=workers,
            dask=dask,
            progress=progress,
        )


def batch_status(batch_id: str, *, ledger: str | os.PathLike[str] | None = None) -> BatchStatus:
    with open_store(ledger) as store:
        return store.status(batch_id)


def output_path(status: BatchStatus, item: BatchItem) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(status.notebook).stem)
    return str(Path(status.output_dir) / f"{stem}-{item.index:03d}.ipynb")


def _execute(
    store: BatchStore,
    batch_id: str,
    indices: list[int] | None,
    *,
    workers: int,
    dask: str | None,
    progress: bool,
) -> BatchStatus:
    status = store.status(batch_id)
    items = [item for item in status.items if indices is None or item.index in indices]
    options = status.options
    with (
        _executor(workers, dask) as (executor, run, stagger),
        _progress(len(items), batch_id, progress) as advance,
    ):
        futures: dict[Future[ItemOutcome], BatchItem] = {}
        for position, item in enumerate(items):
            if position and stagger:
                time.sleep(stagger)
            clear_link(output_path(status, item))
            store.start(batch_id, item.index)
            future = executor.submit(
                run,
                status.notebook,
                output_path(status, item),
                item.parameters,
                timeout_s=options.timeout_s,
                kernel_name=options.kernel_name,
                start_retries=options.start_retries,
                cwd=options.cwd,
            )
            futures[future] = item
        for future in as_completed(futures):
            item = futures[future]
            outcome = _outcome(future, output_path(status, item))
            store.settle(
                batch_id,
                item.index,
                status=outcome.status,  # type: ignore[arg-type]
                duration_s=outcome.duration_s,
                output=outcome.output,
                error=outcome.error,
                results=outcome.results,
            )
            advance(1)
    return store.status(batch_id)


def _outcome(future: Future[ItemOutcome], output: str) -> ItemOutcome:
    """The item's outcome; a worker that died under it fails the item, not the batch."""
    try:
        return future.result()
    except Exception as problem:
        return ItemOutcome(
            "failed",
            0.0,
            output,
            f"the worker running it was lost: {type(problem).__name__}: {problem}",
        )


Runner = Callable[..., ItemOutcome]


def _check_workers(workers: int, dask: str | None) -> None:
    """Refuse, before anything is recorded, where no item could run."""
    if dask is not None:
        check_address(dask)
    elif workers < 1:
        raise ParameterError("workers must be at least 1")


@contextlib.contextmanager
def _executor(workers: int, dask: str | None) -> Iterator[tuple[Executor, Runner, float]]:
    """Where items run, what runs one, and the pause between two starts. Every notebook
    runs in a process of its own (papermill's cwd is process-wide, kernels crash, and the
    notebook's timeout kills it): a child process that a local thread, or a dask worker,
    waits on."""
    if dask is not None:
        with connected(dask) as client:
            yield client.get_executor(pure=False), execute_in_child, 0.0  # type: ignore[no-untyped-call]
        return
    with ThreadPoolExecutor(workers, thread_name_prefix="zeroshot-batch") as pool:
        yield pool, execute_in_child, STAGGER_S


@contextlib.contextmanager
def _progress(total: int, batch_id: str, shown: bool) -> Iterator[Progress]:
    if not shown:
        yield lambda _: None
        return
    from tqdm.auto import tqdm

    with tqdm(total=total, desc=batch_id, unit="notebook") as bar:
        yield bar.update
