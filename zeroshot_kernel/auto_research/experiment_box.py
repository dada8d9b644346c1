"""The boxes of one experiment (``containment.md``): the candidate's command, then its scorer.

The candidate's command runs model-written code, so its box lets it write only its scratch
copy and its outputs folder, reach no network, see an environment of the allow-list, the
task's ``env`` and the seed (never the controller's credentials), and not see the task
folder (its scorer and data), the user's ``.zeroshot/`` (records, ledger) or the home
directory's credentials; its limits come from the task. The scorer runs afterwards in a
box of its own, in the task's ``scorer/`` folder (read-only), with the outputs shown
read-only and nothing else the candidate wrote.

A box that cannot be made refuses a code task (its edits are model-written code); a task
that changes parameters only runs its author's code, so its experiments then run without a
box, and say so.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from zeroshot_kernel import sandbox
from zeroshot_kernel.auto_research.task import ResearchTask
from zeroshot_kernel.sandbox import UNCONTAINED, Box, Containment, Limits, box_env, folder_policy

SEED_VARIABLE = "ZEROSHOT_SEED"
OUTPUT_VARIABLE = "ZEROSHOT_OUTPUT_DIR"
"""The folder the candidate's command writes its outputs to, and the scorer reads."""
GPU_VARIABLES = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
"""Passed on to a GPU task's box when set: which devices it may use."""
_MiB = 1024 * 1024


def experiment_containment(task: ResearchTask, containment: Containment) -> tuple[Containment, str]:
    """How ``task``'s experiments run, and a note when they run without the box asked for.

    Raises :class:`~zeroshot_kernel.sandbox.SandboxUnavailable` (one line: why, and how to
    get a box) for a code task when no box can be made and the run did not choose
    ``--sandbox none``."""
    if not containment.contained:
        return containment, ""
    if task.spec.editable:
        sandbox.require()
        return containment, ""
    problem = sandbox.problem()
    if problem is None:
        return containment, ""
    note = (
        f"{UNCONTAINED}: no box can be made here ({problem}); task {task.spec.name} changes "
        "parameters only, so its experiments run the task's own code without a box"
    )
    return dataclasses.replace(containment, mode="none"), note


def experiment_limits(task: ResearchTask, *, copies: int = 1) -> Limits:
    """The limits of a box running ``copies`` experiments of ``task`` at once (a warm
    interpreter serving parallel repeats shares one box). The box's own processes (its
    init, a warm interpreter) count towards its process limit."""
    limits, budget = task.spec.limits, task.spec.budget_seconds
    return Limits(
        memory_bytes=limits.memory_mb * _MiB * copies,
        processes=limits.processes * copies,
        file_size_bytes=limits.file_size_mb * _MiB,
        cpu_seconds=cpu_seconds(budget),
        address_space_fallback=not task.spec.gpu,
    )


def cpu_seconds(budget: float) -> int:
    """The CPU time one process can use within ``budget`` on this machine's cores: a
    back-up of the wall-clock budget, never stricter than it."""
    return math.ceil(budget * (os.cpu_count() or 1)) + 1


def gpu_devices() -> list[Path]:
    """The NVIDIA device nodes present (``/dev/nvidia0``, ``nvidiactl``, ``nvidia-uvm``,
    ``nvidia-uvm-tools``, ``nvidia-caps``, ...)."""
    return sorted(Path("/dev").glob("nvidia*"))


def experiment_env(task: ResearchTask, values: dict[str, str]) -> dict[str, str]:
    """The allow-list, the task's ``env``, then ``values`` (the seed, the outputs)."""
    names = GPU_VARIABLES if task.spec.gpu else ()
    return box_env({**task.spec.env, **values}, names=names)


def candidate_box(
    task: ResearchTask,
    folder: Path,
    containment: Containment,
    env: dict[str, str],
    *,
    also_writable: Iterable[Path] = (),
    copies: int = 1,
) -> Box:
    """The box of the candidate's command working in ``folder`` (see the module doc)."""
    policy = folder_policy(
        folder,
        containment,
        env=env,
        network=False,
        limits=experiment_limits(task, copies=copies),
        also_writable=also_writable,
        devices=gpu_devices() if task.spec.gpu else (),
    )
    root = Path(os.path.realpath(task.root))
    policy = dataclasses.replace(
        policy,
        hidden=(*policy.hidden, root),
        read_only=(*policy.read_only, *_interpreters_below(root)),
    )
    return Box.open(policy, containment)


def scorer_box(
    task: ResearchTask, outputs: Path, containment: Containment, env: dict[str, str]
) -> Box:
    """The scorer's box: its own folder read-only, the outputs read-only, nothing else
    the candidate wrote, no network."""
    policy = folder_policy(
        task.scorer_dir,
        containment,
        env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
        network=False,
        writable=False,
        limits=Limits(cpu_seconds=cpu_seconds(task.spec.budget_seconds)),
        show=[outputs],
    )
    return Box.open(policy, containment)


def _interpreters_below(root: Path) -> list[Path]:
    """The running interpreter's installation, should it live in the hidden task folder."""
    prefixes = {Path(os.path.realpath(p)) for p in (sys.prefix, sys.base_prefix)}
    return [p for p in prefixes if p == root or root in p.parents]
