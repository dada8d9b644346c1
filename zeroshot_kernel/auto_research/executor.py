"""Where a candidate's experiments run: this machine's cores (the default) or the workers
of a Dask cluster (``--dask tcp://scheduler:8786``).

An experiment is the same wherever it runs: :func:`run_repeats` on a fresh copy of the
candidate's checked bytes, in a box on the machine that runs it. Only the scheduling
differs. On Dask each seed is one task that holds the task's ``resources`` on its worker
(``{GPU: 1}``: one experiment per GPU the workers declare), the candidate's bytes travel
with it, and the worker returns the result's wire form, which the controller validates and
records: the records are written by trusted code on the controller only. A worker lost
mid-experiment has its task rerun elsewhere by the scheduler; the lost run returns
nothing, so every seed is recorded once.

Dask is an optional extra (``pip install 'zeroshot-workbench[dask]'``), imported only when
``--dask`` is used; the workers need this package installed and the task folder at the
same path (a shared filesystem or the same checkout), since a scorer runs from it.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from zeroshot_kernel.auto_research.experiment import ExperimentResult, run_repeats
from zeroshot_kernel.auto_research.pruning import Pruning
from zeroshot_kernel.auto_research.task import ResearchTask
from zeroshot_kernel.dask_scheduler import connected
from zeroshot_kernel.exceptions import OperationFailed
from zeroshot_kernel.sandbox import Containment

if TYPE_CHECKING:
    from distributed import Client

ShippedFile = tuple[str, bool, bytes]
"""One file of a candidate as it travels: its relative path, whether it is executable,
its bytes."""


class ExperimentsLost(OperationFailed):
    """The cluster could not run an experiment: its workers kept dying under it, or none
    has the resources the task declares. Nothing of it was recorded."""


class ExperimentExecutor(Protocol):
    """Runs one candidate's experiments, one result per seed, in the order of ``seeds``."""

    def run(
        self,
        task: ResearchTask,
        candidate: Path,
        seeds: Sequence[int],
        *,
        parallel: int | None,
        containment: Containment,
        pruning: Pruning | None = None,
    ) -> list[ExperimentResult]: ...


@dataclass(frozen=True)
class LocalExecutor:
    """This machine: up to ``parallel`` experiments at a time (default: one per CPU)."""

    def run(
        self,
        task: ResearchTask,
        candidate: Path,
        seeds: Sequence[int],
        *,
        parallel: int | None,
        containment: Containment,
        pruning: Pruning | None = None,
    ) -> list[ExperimentResult]:
        return run_repeats(
            task, candidate, seeds, parallel=parallel, containment=containment, pruning=pruning
        )


@dataclass(frozen=True)
class DaskExecutor:
    """The workers of the Dask scheduler at ``address``: as many experiments at a time as
    they have threads and the task's ``resources`` allow (``parallel`` is the local pool's
    and does not apply)."""

    address: str

    def run(
        self,
        task: ResearchTask,
        candidate: Path,
        seeds: Sequence[int],
        *,
        parallel: int | None,
        containment: Containment,
        pruning: Pruning | None = None,
    ) -> list[ExperimentResult]:
        with connected(self.address) as client:
            return self._run(client, task, candidate, seeds, containment, pruning)

    def _run(
        self,
        client: Client,
        task: ResearchTask,
        candidate: Path,
        seeds: Sequence[int],
        containment: Containment,
        pruning: Pruning | None,
    ) -> list[ExperimentResult]:
        from distributed import KilledWorker

        resources = dict(task.spec.resources)
        _check_resources(client, resources)
        files = _pack(candidate)
        batch = uuid.uuid4().hex[:12]
        futures = [
            client.submit(
                run_on_worker,
                task,
                files,
                seed,
                containment,
                pruning,
                key=f"zeroshot-experiment-{batch}-{seed}",
                resources=resources or None,
                pure=False,
            )
            for seed in seeds
        ]
        try:
            shipped = client.gather(futures)  # type: ignore[no-untyped-call]
        except KilledWorker as lost:
            raise ExperimentsLost(
                f"an experiment of {task.spec.name} lost every worker that ran it ({lost})"
            ) from None
        return [ExperimentResult.from_wire(document) for document in shipped]


def executor_for(dask: str | None) -> ExperimentExecutor:
    """The Dask executor for a scheduler address, else the local one."""
    return DaskExecutor(dask) if dask else LocalExecutor()


def run_on_worker(
    task: ResearchTask,
    files: list[ShippedFile],
    seed: int,
    containment: Containment,
    pruning: Pruning | None = None,
) -> dict[str, Any]:
    """On a Dask worker: one boxed experiment on a copy of the shipped candidate, as wire
    data (the controller validates it before recording it)."""
    with tempfile.TemporaryDirectory(prefix="zeroshot-shipped-") as scratch:
        candidate = Path(scratch) / "candidate"
        _unpack(files, candidate)
        result = run_repeats(
            task, candidate, [seed], parallel=1, containment=containment, pruning=pruning
        )[0]
    return result.to_wire()


def _check_resources(client: Client, resources: dict[str, float]) -> None:
    """Refuse a task no worker could run, rather than wait for one forever."""
    if not resources:
        return
    workers = client.scheduler_info(n_workers=-1)["workers"].values()
    if not any(
        all(worker.get("resources", {}).get(name, 0) >= need for name, need in resources.items())
        for worker in workers
    ):
        wanted = ", ".join(f"{name}={need:g}" for name, need in resources.items())
        raise ExperimentsLost(
            f"no worker of the Dask scheduler declares the resources the task needs ({wanted}): "
            f"start workers with `dask worker ... --resources {wanted.replace(', ', ',')}`"
        )


def _pack(candidate: Path) -> list[ShippedFile]:
    """The files of a restored (checked) candidate copy, as they travel to a worker."""
    files: list[ShippedFile] = []
    for folder, _, names in os.walk(candidate):
        for name in names:
            path = Path(folder) / name
            files.append(
                (
                    path.relative_to(candidate).as_posix(),
                    os.access(path, os.X_OK),
                    path.read_bytes(),
                )
            )
    return files


def _unpack(files: list[ShippedFile], dest: Path) -> None:
    dest.mkdir()
    for relative, executable, content in files:
        path = dest / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        if executable:
            path.chmod(0o755)
