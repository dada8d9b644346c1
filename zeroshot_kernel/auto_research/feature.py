"""What auto-research adds to the core (published as the ``auto_research`` entry point)."""

from zeroshot_kernel.features import EmbeddedCode, Feature

_PACKAGE = "zeroshot_kernel.auto_research"
_AGENTS = f"{_PACKAGE}.local_agents"
_TRUSTED = f"{_PACKAGE}.trusted_nodes"
_ROLES = f"{_PACKAGE}.llm_roles"
_STRATEGIES = ("exploration", "synthesis", "challenge")
_RELEASE = f"{_PACKAGE}.engine_context:release_run"

FEATURE = Feature(
    name="auto_research",
    templates={"auto-research": f"{_PACKAGE}.template:TEMPLATE"},
    harnesses={"git_delivery": "zeroshot_kernel.delivery.harness:GitDeliveryHarness"},
    embedded_agents={
        **{
            f"research.scout.{s}": EmbeddedCode(
                f"{_AGENTS}:scout_{s}", f"{_AGENTS}:engine_context", release=_RELEASE
            )
            for s in _STRATEGIES
        },
        "research.researcher": EmbeddedCode(
            f"{_AGENTS}:researcher", f"{_AGENTS}:engine_context", release=_RELEASE
        ),
        "research.reviewer": EmbeddedCode(
            f"{_AGENTS}:reviewer", f"{_AGENTS}:engine_context", release=_RELEASE
        ),
    },
    trusted_code={
        "research.measure": EmbeddedCode(
            f"{_TRUSTED}:measure",
            f"{_TRUSTED}:engine_context",
            worker="zeroshot.research.measure@1",
            release=_RELEASE,
        ),
        "research.adopt": EmbeddedCode(
            f"{_TRUSTED}:adopt",
            f"{_TRUSTED}:engine_context",
            worker="zeroshot.research.adopt@1",
            release=_RELEASE,
        ),
    },
    roles={
        **{f"zeroshot.research.scout-{s}@1": f"{_ROLES}:SCOUT" for s in _STRATEGIES},
        "zeroshot.research.researcher@1": f"{_ROLES}:RESEARCHER",
        "zeroshot.research.reviewer@1": f"{_ROLES}:REVIEWER",
    },
    deliveries={"zeroshot.git-delivery.push@1": f"{_PACKAGE}.publish:deliver_node"},
    commands={"research": f"{_PACKAGE}.commands:research_app"},
    submit_guards=(f"{_PACKAGE}.studies:claimed",),
)
