"""Git delivery: the one trusted writer that publishes reviewed work with git.

Agents never run git writes; a delivery node does, through the ``git_delivery`` harness,
in a worktree of its own on the branch ``zeroshot/<run-id>``. This package holds what every
delivery shares (git calls, the run's worktree and remote, the GitHub API, cleanup); the
features register what each of their delivery nodes does.
"""

from zeroshot_kernel.delivery.worktree import DeliveryRefused

__all__ = ["DeliveryRefused"]
