"""What software change adds to the core (one of :mod:`zeroshot_kernel.builtins`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from zeroshot_kernel.features import Feature

if TYPE_CHECKING:
    import typer

    from zeroshot_kernel.delivery.harness import Delivery
    from zeroshot_kernel.harness.roles import Role
    from zeroshot_kernel.templates import Template

_REVIEWERS = ("acceptance", "code", "seam", "integration")
_DELIVERIES = ("push", "pr", "merge")


def _template() -> Template:
    from zeroshot_kernel.software_change.template import TEMPLATE

    return TEMPLATE


def _reviewer() -> Role:
    from zeroshot_kernel.software_change.review.briefs import REVIEWER

    return REVIEWER


def _deliver() -> Delivery:
    from zeroshot_kernel.software_change.delivery_node import deliver_node

    return deliver_node


def _commands() -> typer.Typer:
    from zeroshot_kernel.software_change.commands import change_app

    return change_app


FEATURE = Feature(
    name="software_change",
    templates={"software-change": _template},
    roles={f"builtin.agent.{r}-verifier@1": _reviewer for r in _REVIEWERS},
    deliveries={f"builtin.git-delivery.{d}@1": _deliver for d in _DELIVERIES},
    commands={"change": _commands},
)
