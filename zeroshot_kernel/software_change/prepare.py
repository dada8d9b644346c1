"""Preparing a software-change run before any agent runs: the repository, the target
branch verified on the remote, the trust baseline (:mod:`zeroshot_kernel.software_change.trust`,
recorded in the run input so a resumed run checks it too), and the run's own worktree on
``zeroshot/<run-id>``, which is the run's workspace (its agents work there, never in the
user's checkout)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zeroshot_kernel.delivery.cleanup import exclude_workbench_files
from zeroshot_kernel.delivery.github import repository_slug
from zeroshot_kernel.delivery.worktree import (
    DeliveryRefused,
    Repository,
    Target,
    open_repository,
    push_remote,
    run_worktree,
    verify_target,
)
from zeroshot_kernel.software_change.trust import baseline

if TYPE_CHECKING:
    from zeroshot_kernel.client import Client, Run


@dataclass(frozen=True)
class Prepared:
    repository: Repository
    base: str
    target: Target | None
    trust: dict[str, Any] = field(default_factory=dict)
    """The run input's ``trust`` baseline."""

    def delivery(
        self,
        mode: str,
        *,
        feedback: bool = True,
        api_url: str | None = None,
        poll_seconds: int | None = None,
        checks_timeout_seconds: int | None = None,
    ) -> dict[str, Any] | None:
        """The run input's ``delivery`` record (``None`` for ``none``)."""
        if mode == "none" or self.target is None:
            return None
        document: dict[str, Any] = {
            "mode": mode,
            "remote": self.target.remote.name,
            "targetBranch": self.target.branch,
            "baseRevision": self.base,
            "feedback": feedback,
        }
        slug = repository_slug(self.target.remote.url)
        if slug:
            document["repository"] = slug
        if api_url:
            document["apiUrl"] = api_url
        if poll_seconds is not None:
            document["pollSeconds"] = poll_seconds
        if checks_timeout_seconds is not None:
            document["checksTimeoutSeconds"] = checks_timeout_seconds
        return document


async def prepare(workspace: Path, mode: str, *, allow_unproven: bool = False) -> Prepared:
    """Raises :class:`~zeroshot_kernel.delivery.worktree.DeliveryRefused`; for a mode that
    publishes, with "target branch could not be verified" when the remote lacks it.
    ``allow_unproven``: deliver even when the completion decision is not
    ``CANDIDATE_COMPLETE`` (the receipt and the final line say so)."""
    repository = await open_repository(workspace)
    await exclude_workbench_files(repository)
    base = await repository.git("rev-parse", "HEAD")
    target = None if mode == "none" else await verify_target(repository)
    if target is not None:
        remote = target.remote.name
    else:
        try:
            remote = (await push_remote(repository)).name
        except DeliveryRefused:
            remote = ""
    trust = await asyncio.to_thread(
        baseline,
        repository.root,
        base=base,
        mode=mode,
        remote=remote,
        allow_unproven=allow_unproven,
    )
    return Prepared(repository, base, target, trust)


def submit_change(
    client: Client,
    prepared: Prepared,
    *,
    graph: dict[str, Any],
    input: dict[str, Any],
    runtime: dict[str, Any],
    title: str,
) -> Run:
    """Admit and record the run, make its worktree, and start its controller there.
    Raises :class:`~zeroshot_kernel.client.AdmissionRejected`, or
    :class:`~zeroshot_kernel.sandbox.SandboxUnavailable` when the change declares checks
    (the writer's code, run by trusted code) and no box can be made, before anything
    exists."""
    from zeroshot_kernel import sandbox
    from zeroshot_kernel.admission.admit import admit
    from zeroshot_kernel.engine.launch import start_detached
    from zeroshot_kernel.software_change.review.briefs import declared_checks

    if declared_checks(input) and runtime.get("sandbox") != "none":
        sandbox.require()
    if "trust" in input and prepared.trust:
        input = {**input, "trust": prepared.trust}
    run = client.record(admit(graph, initial_input=input, runtime=runtime, title=title))
    run_id = run.id
    root = prepared.repository.root
    worktree = asyncio.run(run_worktree(prepared.repository, root, run_id))
    (worktree.path / ".zeroshot").mkdir(exist_ok=True)  # the run's own files (logs)
    start_detached(client.url, run_id, worktree.path)
    return run
