"""Delivery: the one trusted writer that publishes reviewed work (``--push``) with git.

Research agents never run git; the ``deliver`` node of an auto-research run does, through
the ``git_delivery`` harness, in a worktree of its own on the branch ``zeroshot/<run-id>``.
"""

from zeroshot_kernel.delivery.harness import GitDeliveryHarness
from zeroshot_kernel.delivery.push_delivery import Delivered, deliver, preflight
from zeroshot_kernel.delivery.worktree import DeliveryRefused

__all__ = ["Delivered", "DeliveryRefused", "GitDeliveryHarness", "deliver", "preflight"]
