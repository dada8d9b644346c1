"""The repository a workspace lives in, its push remote, and one git worktree per run.

Delivery never touches the user's checkout: each run publishes from its own worktree at
``<workspace>/.zeroshot/worktrees/<run-id>`` on the managed branch ``zeroshot/<run-id>``,
made from the repository's HEAD at the run's first delivery and reused after that (also by
a resumed controller).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from zeroshot_kernel.delivery.git import (
    NETWORK_TIMEOUT_S,
    Credentials,
    Git,
    GitError,
    push_credentials,
    user_settings,
)
from zeroshot_kernel.engine.launch import RUN_WORKTREES
from zeroshot_kernel.exceptions import Refused

BRANCH_PREFIX = "zeroshot/"
WORKTREES = RUN_WORKTREES
PUBLISH_WORKTREES = Path(".zeroshot") / "publish"
"""Worktrees of runs that only deliver from them (auto-research ``--push``): not under
:data:`WORKTREES`, whose run folders a resumed controller works in."""
DEFAULT_REMOTE = "origin"
TOKEN_ENV = "GH_TOKEN"
"""The controller's variable whose token authenticates HTTPS pushes and reads."""
FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "zeroshot delivery",
    "GIT_AUTHOR_EMAIL": "zeroshot@localhost",
    "GIT_COMMITTER_NAME": "zeroshot delivery",
    "GIT_COMMITTER_EMAIL": "zeroshot@localhost",
}
"""Who commits when neither the repository nor the user configures anybody (a commit
needs a name)."""


class DeliveryRefused(Refused):
    """The workspace cannot take a delivery: not a repository, no commit, no usable remote."""


@dataclass(frozen=True)
class Remote:
    name: str
    url: str

    @property
    def display(self) -> str:
        """The URL without any user or password in it, for logs and receipts."""
        parts = urlsplit(self.url)
        if not parts.netloc or "@" not in parts.netloc:
            return self.url
        return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


@dataclass(frozen=True)
class Repository:
    root: Path
    """The top level of the work tree that holds the workspace."""
    git: Git


@dataclass(frozen=True)
class RunWorktree:
    path: Path
    branch: str
    git: Git


async def open_repository(workspace: Path, *, needed_for: str = "") -> Repository:
    """The repository holding ``workspace``; refuses a workspace outside git or without a
    commit to branch from.

    ``needed_for`` ends the refusal with why the caller needs git (e.g. "--push publishes
    accepted rounds with git"), since several commands come here and each has its own
    reason; without it the advice is only to work inside a repository.
    """
    git = Git(workspace)
    try:
        root = Path(await git("rev-parse", "--show-toplevel"))
    except (GitError, FileNotFoundError) as failure:
        advice = f"{needed_for}, so run it" if needed_for else "run zeroshot"
        raise DeliveryRefused(
            f"the workspace {workspace} is not a git repository ({failure}); "
            f"{advice} inside a git repository"
        ) from None
    if not await git("rev-parse", "--verify", "-q", "HEAD", check=False):
        raise DeliveryRefused(f"the repository {root} has no commit to branch from yet")
    settings = await asyncio.to_thread(user_settings, root)
    return Repository(root, Git(root, settings.identity or FALLBACK_IDENTITY))


async def credentials(git: Git, remote: Remote, token: str | None = None) -> Credentials:
    """How git authenticates to ``remote``: ``token`` (default: the controller's
    ``GH_TOKEN``), else the user's global credential helpers (see
    :mod:`zeroshot_kernel.delivery.git`)."""
    settings = await asyncio.to_thread(user_settings, git.cwd)
    chosen = os.environ.get(TOKEN_ENV, "") if token is None else token
    return push_credentials(remote.url, chosen, settings.helpers)


async def ls_remote(
    git: Git, remote: Remote, *patterns: str, timeout: float = 60
) -> dict[str, str]:
    """The remote's branches and tags (those matching ``patterns`` when given): name ->
    sha."""
    listed = await git(
        "ls-remote",
        "--upload-pack=git-upload-pack",
        "--heads",
        "--tags",
        remote.name,
        *patterns,
        timeout=timeout,
        credentials=await credentials(git, remote),
    )
    found: dict[str, str] = {}
    for line in listed.splitlines():
        sha, _, name = line.partition("\t")
        if name:
            found[name] = sha
    return found


async def push_remote(repository: Repository) -> Remote:
    """The upstream remote of the current branch when it has one, else ``origin``."""
    git = repository.git
    branch = await git("symbolic-ref", "-q", "--short", "HEAD", check=False)
    name = await git("config", "--get", f"branch.{branch}.remote", check=False) if branch else ""
    if not name or name == ".":
        name = DEFAULT_REMOTE
    url = await git("remote", "get-url", name, check=False)
    if not url:
        raise DeliveryRefused(
            f"the repository {repository.root} has no remote {name!r} to push to; add one "
            f"(git remote add {name} URL) or set the current branch's upstream"
        )
    return Remote(name, url)


async def check_reachable(repository: Repository, remote: Remote) -> None:
    """Refuse, saying why, when the remote cannot be read (unreachable, no access)."""
    try:
        await ls_remote(repository.git, remote)
    except GitError as failure:
        raise DeliveryRefused(
            f"the remote {remote.name} ({remote.display}) cannot be reached: {failure.stderr}"
        ) from None


async def run_worktree(
    repository: Repository, workspace: Path, run_id: str, *, folder: Path = WORKTREES
) -> RunWorktree:
    """This run's worktree, made on first use from the repository's current HEAD, under
    ``folder``: :data:`WORKTREES` for a run that works in it (its controller runs there,
    first start and resumes alike), another folder for one that only delivers from it."""
    path = workspace / folder / run_id
    branch = BRANCH_PREFIX + run_id
    git = Git(path, repository.git.env)
    if (path / ".git").exists():
        return RunWorktree(path, branch, git)
    await repository.git("worktree", "prune")  # a removed worktree leaves its registration
    if await repository.git("rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False):
        await repository.git("worktree", "add", "-q", str(path), branch)
    else:
        await repository.git("worktree", "add", "-q", "-b", branch, str(path), "HEAD")
    return RunWorktree(path, branch, git)


TARGET_UNVERIFIED = "target branch could not be verified"


@dataclass(frozen=True)
class Target:
    """Where a change is delivered: the remote and the branch it must already hold."""

    remote: Remote
    branch: str
    revision: str
    """The target branch's revision on the remote when it was verified."""


async def target_branch(repository: Repository) -> tuple[Remote, str]:
    """The current branch's upstream (remote and branch), else the push remote and the
    local branch's own name."""
    git = repository.git
    upstream = await git(
        "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}", check=False
    )
    local = await git("symbolic-ref", "-q", "--short", "HEAD", check=False)
    remote = await push_remote(repository)
    if upstream and "/" in upstream:
        merge = await git("config", "--get", f"branch.{local}.merge", check=False)
        branch = merge.removeprefix("refs/heads/") if merge else upstream.split("/", 1)[1]
        return remote, branch
    if not local:
        raise DeliveryRefused(f"{TARGET_UNVERIFIED}: HEAD is detached and has no upstream")
    return remote, local


async def verify_target(repository: Repository) -> Target:
    """The target branch, verified to exist on the remote (before any agent runs)."""
    remote, branch = await target_branch(repository)
    try:
        listed = await ls_remote(repository.git, remote, f"refs/heads/{branch}")
    except GitError as failure:
        raise DeliveryRefused(
            f"{TARGET_UNVERIFIED}: the remote {remote.name} "
            f"({remote.display}) cannot be reached: {failure.stderr}"
        ) from None
    revision = listed.get(f"refs/heads/{branch}", "")
    if not revision:
        raise DeliveryRefused(
            f"{TARGET_UNVERIFIED}: the remote {remote.name} "
            f"({remote.display}) has no branch {branch}"
        )
    return Target(remote, branch, revision)


REJECTED_PUSH = ("[rejected]", "non-fast-forward", "fetch first")
"""How git says the remote branch moved on: a repair, not an unreachable remote."""


async def push_branch(
    worktree: RunWorktree,
    remote: Remote,
    *,
    revision: str = "HEAD",
    lease: str | None = None,
    guarded: bool = False,
) -> str:
    """Push ``revision`` to the run's branch on the remote, hardened (no hook runs, no
    configured receive-pack, our credentials only); what the remote rejected, or ``""``.
    ``lease``: the sha the remote's branch must still hold for the push to replace it
    (``""``: the branch must not exist), so a repaired change replaces what this run pushed
    before and nothing else. ``guarded``: the push dies with the controller (every
    delivery, each of which reconciles with the remote when resumed)."""
    ref = f"refs/heads/{worktree.branch}"
    leased = [f"--force-with-lease={ref}:{lease}"] if lease is not None else []
    try:
        await worktree.git(
            "push",
            "-q",
            "--no-verify",
            "--receive-pack=git-receive-pack",
            *leased,
            remote.name,
            f"{revision}:{ref}",
            timeout=NETWORK_TIMEOUT_S,
            guarded=guarded,
            credentials=await credentials(worktree.git, remote),
        )
    except GitError as failure:
        refusals = [
            line.strip()
            for line in failure.stderr.splitlines()
            if any(marker in line for marker in REJECTED_PUSH)
        ]
        if refusals:
            return refusals[0]
        raise DeliveryRefused(
            f"the remote {remote.name} ({remote.display}) cannot be "
            f"reached: {failure.stderr or failure}"
        ) from None
    return ""
