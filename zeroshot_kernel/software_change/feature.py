"""What software change adds to the core (published as the ``software_change`` entry
point)."""

from zeroshot_kernel.features import Feature

_PACKAGE = "zeroshot_kernel.software_change"
_REVIEWERS = ("acceptance", "code", "seam", "integration")
_DELIVERIES = ("push", "pr", "merge")

FEATURE = Feature(
    name="software_change",
    templates={"software-change": f"{_PACKAGE}.template:TEMPLATE"},
    harnesses={"git_delivery": "zeroshot_kernel.delivery.harness:GitDeliveryHarness"},
    roles={
        f"builtin.agent.{r}-verifier@1": f"{_PACKAGE}.review.briefs:REVIEWER" for r in _REVIEWERS
    },
    deliveries={
        f"builtin.git-delivery.{d}@1": f"{_PACKAGE}.delivery_node:deliver_node" for d in _DELIVERIES
    },
    commands={"change": f"{_PACKAGE}.commands:change_app"},
)
