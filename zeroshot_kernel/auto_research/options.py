"""The options of an auto-research run, declared once.

``zeroshot research run`` and ``%zeroshot research`` build their Typer options from
:data:`RESEARCH_OPTIONS`, and the Launcher its fields, so the three cannot drift apart in
names, defaults, bounds or checks; :func:`research_problems` is the one check of the values
all three run before anything is submitted. (``--sandbox``, ``--ledger`` and ``--target``
belong to every command that runs something, not to research: they are declared with the
console's other options.)

>>> by_name("iterations").flag, by_name("iterations").default
('--iterations', 10)
>>> by_name("parallel").problem(40)
'--parallel 40: not in the range 1 to 32'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

OptionValue = int | str | bool | None

DEFAULT_ITERATIONS = 10
MAX_ITERATIONS = 100
BASE_URL_ENV = "ZEROSHOT_OPENAI_BASE_URL"
DASK_ENV = "ZEROSHOT_DASK_SCHEDULER"
MAX_PARALLEL = 32
MAX_TOKENS_LIMIT = 1_000_000
"""The most ``--max-tokens`` takes (:data:`zeroshot_kernel.harness.plan.MAX_MAX_TOKENS`)."""

RESEARCH_HARNESSES = ("local", "claude", "codex", "openai")
"""The core harnesses that run the research agents (``python`` runs callables, which a user
binds node by node in a runtime plan of their own). An installed plugin's harness is left
to admission, which knows what is installed."""


@dataclass(frozen=True)
class ResearchOption:
    """One option: ``name`` is its keyword (a ``TemplateOptions`` field and a Launcher
    argument) and, with dashes, its flag."""

    name: str
    kind: type[int] | type[str] | type[bool]
    default: OptionValue
    """What not giving the option means; ``None``: the template's or the harness's own
    default (``help`` says which)."""
    help: str
    choices: tuple[str, ...] = ()
    """The values offered (the Launcher's menu); checks beyond them are the option's own."""
    low: int | None = None
    high: int | None = None
    envvar: str | None = None
    """Read when the option is not given, by the command line and the Launcher alike."""
    only_for: str | None = None
    """The one harness that reads it (the Launcher shows it with that harness only)."""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, text: str) -> OptionValue:
        """A value typed as text (the Launcher's fields): blank is the default; ``ValueError``
        for a number that is none."""
        text = text.strip()
        if not text:
            return self.default
        if self.kind is int:
            try:
                return int(text)
            except ValueError:
                raise ValueError(f"{self.flag} {text!r}: not a whole number") from None
        return text

    def problem(self, value: OptionValue) -> str | None:
        """Why ``value`` is refused, in the words every front end prints; None if it is not."""
        if value is None or self.kind is not int:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{self.flag} {value!r}: not a whole number"
        if (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        ):
            return f"{self.flag} {value}: not in the range {self.low} to {self.high}"
        return None


RESEARCH_OPTIONS: tuple[ResearchOption, ...] = (
    ResearchOption(
        "iterations",
        int,
        DEFAULT_ITERATIONS,
        "Rounds to run.",
        low=1,
        high=MAX_ITERATIONS,
    ),
    ResearchOption(
        "harness",
        str,
        "local",
        "local (embedded agents), claude, codex or openai (when installed).",
        choices=RESEARCH_HARNESSES,
    ),
    ResearchOption("provider", str, None, "Provider for an LLM harness (default: its own)."),
    ResearchOption("model", str, None, "Model for an LLM harness (default: its own)."),
    ResearchOption(
        "base_url",
        str,
        None,
        "openai harness: the OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 "
        f"(default: ${BASE_URL_ENV}, else $OPENAI_BASE_URL, else the hosted API). Its key "
        "is read from OPENAI_API_KEY when set; a local server needs none.",
        envvar=BASE_URL_ENV,
        only_for="openai",
    ),
    ResearchOption(
        "max_tokens",
        int,
        None,
        "openai harness: the most tokens one reply may take (default 4096).",
        low=1,
        high=MAX_TOKENS_LIMIT,
        only_for="openai",
    ),
    ResearchOption(
        "study",
        str,
        None,
        "The study to continue or start (records in .zeroshot/research/STUDY; default: the "
        "task folder's name).",
    ),
    ResearchOption("push", bool, False, "Publish each accepted round with git."),
    ResearchOption(
        "dask",
        str,
        None,
        "Run the experiments on this dask.distributed scheduler, e.g. tcp://host:8786, one "
        "per worker slot and the task's `resources` (default: "
        f"${DASK_ENV}, else this machine's cores). Needs the `dask` extra.",
        envvar=DASK_ENV,
    ),
    ResearchOption(
        "parallel",
        int,
        None,
        "Candidates a round measures at once: the researcher's change and the round's other "
        "scout proposals on the same parent (default: the task's `parallel`, else 1). "
        "Adoption takes the first that beats the noise, in that order.",
        low=1,
        high=MAX_PARALLEL,
    ),
)


def by_name(name: str) -> ResearchOption:
    """The declared option called ``name`` (``KeyError`` for any other)."""
    for option in RESEARCH_OPTIONS:
        if option.name == name:
            return option
    raise KeyError(name)


def harness_problem(harness: str) -> str | None:
    """Why ``harness`` cannot run this research here (it does not run agents, or this
    installation does not have it), naming the ones that can; None when it can, or when the
    name is no core harness (admission then says whether it is installed)."""
    from zeroshot_kernel.harness.plan import CORE_AGENT_HARNESSES
    from zeroshot_kernel.harness.registry import available_harnesses

    if harness not in CORE_AGENT_HARNESSES:
        return None
    installed = available_harnesses()
    if harness not in RESEARCH_HARNESSES:
        problem = (
            f"the {harness} harness runs Python callables, not research agents; bind them in "
            "a runtime plan of your own (start from `zeroshot template show auto-research "
            "--json`)"
        )
    elif harness not in installed:
        problem = f"the {harness} harness is not available in this installation"
    else:
        return None
    usable = ", ".join(h for h in RESEARCH_HARNESSES if h in installed)
    return f"--harness {harness}: {problem}; usable here: {usable}"


def research_problems(values: Mapping[str, OptionValue]) -> list[str]:
    """Every declared check on the chosen values, in declaration order: bounds, then the
    harness. The command line and the magic refuse the first; the Launcher shows them all."""
    problems = [
        problem
        for option in RESEARCH_OPTIONS
        if (problem := option.problem(values.get(option.name, option.default))) is not None
    ]
    harness = values.get("harness", by_name("harness").default)
    found = harness_problem(harness) if isinstance(harness, str) else None
    return problems if found is None else [*problems, found]
