"""The repository a workspace lives in, its push remote, and one git worktree per run.

Delivery never touches the user's checkout: each run publishes from its own worktree at
``<workspace>/.zeroshot/worktrees/<run-id>`` on the managed branch ``zeroshot/<run-id>``,
made from the repository's HEAD at the run's first delivery and reused after that (also by
a resumed controller).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from zeroshot_kernel.delivery.git import NETWORK_TIMEOUT_S, Git, GitError
from zeroshot_kernel.engine.launch import RUN_WORKTREES
from zeroshot_kernel.exceptions import Refused

BRANCH_PREFIX = "zeroshot/"
WORKTREES = RUN_WORKTREES
PUBLISH_WORKTREES = Path(".zeroshot") / "publish"
"""Worktrees of runs that only deliver from them (auto-research ``--push``): not under
:data:`WORKTREES`, whose run folders a resumed controller works in."""
DEFAULT_REMOTE = "origin"
FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "zeroshot delivery",
    "GIT_AUTHOR_EMAIL": "zeroshot@localhost",
    "GIT_COMMITTER_NAME": "zeroshot delivery",
    "GIT_COMMITTER_EMAIL": "zeroshot@localhost",
}
"""Who commits when the repository configures nobody (a commit needs a name)."""


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


async def open_repository(workspace: Path) -> Repository:
    """The repository holding ``workspace``; refuses a workspace outside git or without a
    commit to branch from."""
    git = Git(workspace)
    try:
        root = Path(await git("rev-parse", "--show-toplevel"))
    except (GitError, FileNotFoundError) as failure:
        raise DeliveryRefused(
            f"the workspace {workspace} is not a git repository ({failure}); --push publishes "
            "accepted rounds with git, so run it inside a repository with a remote"
        ) from None
    if not await git("rev-parse", "--verify", "-q", "HEAD", check=False):
        raise DeliveryRefused(f"the repository {root} has no commit to branch from yet")
    identity = await git("config", "user.email", check=False)
    return Repository(root, Git(root, None if identity else FALLBACK_IDENTITY))


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
        await repository.git("ls-remote", "--heads", remote.name, timeout=60)
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
        listed = await repository.git(
            "ls-remote", "--heads", remote.name, f"refs/heads/{branch}", timeout=60
        )
    except GitError as failure:
        raise DeliveryRefused(
            f"{TARGET_UNVERIFIED}: the remote {remote.name} "
            f"({remote.display}) cannot be reached: {failure.stderr}"
        ) from None
    revision = listed.split()[0] if listed else ""
    if not revision:
        raise DeliveryRefused(
            f"{TARGET_UNVERIFIED}: the remote {remote.name} "
            f"({remote.display}) has no branch {branch}"
        )
    return Target(remote, branch, revision)


REJECTED_PUSH = ("[rejected]", "non-fast-forward", "fetch first")
"""How git says the remote branch moved on: a repair, not an unreachable remote."""


async def push_branch(
    worktree: RunWorktree, remote: Remote, *, force_with_lease: bool = False, guarded: bool = False
) -> str:
    """Push the run's branch; what the remote rejected, or ``""``. ``force_with_lease``
    lets a repaired branch replace what this run pushed before, and nothing else.
    ``guarded``: the push dies with the controller (every delivery, each of which
    reconciles with the remote when resumed)."""
    lease = ["--force-with-lease"] if force_with_lease else []
    try:
        await worktree.git(
            "push",
            "-q",
            *lease,
            remote.name,
            f"HEAD:refs/heads/{worktree.branch}",
            timeout=NETWORK_TIMEOUT_S,
            guarded=guarded,
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
