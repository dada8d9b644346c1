"""The research task folder: ``task.yaml`` plus a ``candidate/`` directory.

A task is data, not code: the engine, the embedded agents and the notebooks all read the
same folder, so every way of getting it wrong ends in one :class:`TaskError` that names the
folder and the offending field.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from zeroshot_kernel.auto_research.pruning import PrunerSpec
from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.contract.reading import DocumentError, loads_document, read_text
from zeroshot_kernel.exceptions import InvalidInput

TASK_FILE = "task.yaml"
CANDIDATE_DIR = "candidate"
SCORER_DIR = "scorer"
"""The folder next to ``candidate/`` a task's ``score`` command runs in: the candidate's
box never sees it (held-out labels, exact answers)."""
PYTHON_PLACEHOLDER = "{python}"

Direction = Literal["minimize", "maximize"]
ParamType = Literal["float", "int", "categorical"]
ParamValue = bool | int | float | str
"""One parameter value as JSON carries it; ``bool`` first so a boolean never reads as 1."""
Params = dict[str, ParamValue]


class TaskError(InvalidInput):
    """A research task folder that cannot be used, with the reason."""


class NoSearchSpace(TaskError):
    """The embedded agents were asked to research a task without a search space."""


class SearchParameter(ContractModel):
    """One tunable parameter of the candidate, as the embedded scouts sample it."""

    name: Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    type: ParamType
    low: float | None = None
    high: float | None = None
    choices: list[ParamValue] | None = None
    log: bool = False

    @model_validator(mode="after")
    def _check_domain(self) -> SearchParameter:
        if self.type == "categorical":
            if not self.choices or self.low is not None or self.high is not None or self.log:
                raise ValueError("a categorical parameter needs 'choices' and no low/high/log")
            kinds = {_choice_kind(c) for c in self.choices}
            if len(kinds) != 1 or len(set(map(repr, self.choices))) != len(self.choices):
                raise ValueError(
                    "choices must be unique and all of one kind (text, number or boolean)"
                )
            return self
        if self.choices is not None or self.low is None or self.high is None:
            raise ValueError(f"a {self.type} parameter needs 'low' and 'high' and no 'choices'")
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.high):
            raise ValueError("'low' must be below 'high' and both finite")
        if self.log and self.low <= 0:
            raise ValueError("a log-scale parameter needs 'low' > 0")
        if self.type == "int" and not (self.low.is_integer() and self.high.is_integer()):
            raise ValueError("an int parameter needs whole-number bounds")
        return self

    def check(self, value: Any) -> ParamValue:
        """``value`` as this parameter's type, or ``ValueError`` when it is outside the domain."""
        if self.type == "categorical":
            assert self.choices is not None
            for choice in self.choices:
                if _choice_kind(choice) == _choice_kind(value) and choice == value:
                    return choice
            raise ValueError(f"{self.name}={value!r} is not one of {self.choices!r}")
        assert self.low is not None and self.high is not None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{self.name}={value!r} is not a number")
        if not (math.isfinite(value) and self.low <= value <= self.high):
            raise ValueError(f"{self.name}={value!r} is outside [{self.low:g}, {self.high:g}]")
        if self.type == "int":
            if not float(value).is_integer():
                raise ValueError(f"{self.name}={value!r} is not a whole number")
            return int(value)
        return float(value)


def _choice_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    return "number" if isinstance(value, int | float) else "text"


Command = Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
ResourceName = Annotated[str, Field(max_length=64, pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*$")]


class TaskLimits(ContractModel):
    """What one experiment's box may use (``limits`` in ``task.yaml``); over a limit, the
    experiment ends as ``resource_limit`` and the run goes on. CPU time follows from the
    budget."""

    memory_mb: Annotated[int, Field(ge=16, le=16 * 1024 * 1024)] = 8192
    processes: Annotated[int, Field(ge=4, le=1_000_000)] = 512
    file_size_mb: Annotated[int, Field(ge=1, le=16 * 1024 * 1024)] = 2048


class TaskSpec(ContractModel):
    """The contents of ``task.yaml`` (camelCase keys, unknown keys rejected)."""

    name: Annotated[str, Field(min_length=1, max_length=128)]
    charter: Annotated[str, Field(min_length=1)]
    metric: Annotated[str, Field(min_length=1)]
    direction: Direction
    command: Command
    score: Command | None = None
    """The scorer: run after ``command`` in ``scorer/`` (a box of its own), it reads the
    outputs ``command`` left in ``$ZEROSHOT_OUTPUT_DIR`` and prints the metric; when set,
    only its output is read for the metric."""
    self_scored: bool = False
    """A code task whose experiment prints its own metric, declared so on purpose (every
    view says "self-scored"); a code task needs this or ``score``."""
    budget_seconds: Annotated[float, Field(gt=0, le=3600)]
    repeats: Annotated[int, Field(ge=2, le=20)]
    max_seeds: Annotated[int, Field(ge=2, le=200)] | None = None
    """Racing's budget: the most paired seeds one comparison may be measured on while its
    evidence is undecided (default: three times ``repeats``; a discriminating measurement
    doubles it). Below ``repeats``, ``repeats`` is used."""
    search_space: list[SearchParameter] = Field(default_factory=list)
    """The tunable parameters; empty for a code task (one with only ``editable`` files)."""
    params_file: str = "params.json"
    target: float | None = None
    env: dict[str, str] = Field(default_factory=dict)
    preload: list[str] = Field(default_factory=list)
    """Modules a warm interpreter imports once for ``{python} script.py`` experiments."""
    editable: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        default_factory=list, max_length=64
    )
    """Globs of the files inside ``candidate/`` a change may edit, matched against the whole
    relative path (``fnmatch``: ``*`` also matches ``/``); empty: parameters only."""
    limits: TaskLimits = Field(default_factory=TaskLimits)
    pruner: PrunerSpec | None = None
    """Stops experiments whose learning curve (``ZEROSHOT_METRIC`` lines with a ``step``)
    cannot beat the earlier runs' (``{kind: median}`` or ``{kind: successive-halving}``;
    see ``pruning``); off when absent."""
    gpu: bool = False
    """The experiment uses the machine's NVIDIA GPUs: their device nodes are bound into
    its box, and its memory is limited by cgroup only (an address-space limit breaks
    CUDA's start)."""
    resources: dict[ResourceName, Annotated[float, Field(gt=0, le=1_000_000)]] = Field(
        default_factory=dict, max_length=16
    )
    """What one experiment holds of a Dask worker's declared resources (``{GPU: 1}``):
    with ``--dask``, a worker runs as many experiments at once as its resources allow
    (one per GPU); the local executor ignores it."""
    parallel: Annotated[int, Field(ge=1, le=32)] = 1
    """Candidates a round measures at once (``--parallel`` overrides it): the researcher's
    change, then the round's other scout proposals applied to the same parent."""

    @model_validator(mode="after")
    def _check_names(self) -> TaskSpec:
        if not self.search_space and not self.editable:
            raise ValueError(
                "the task declares neither a searchSpace nor editable files, so "
                "nothing could change: give it one or both"
            )
        names = [p.name for p in self.search_space]
        if len(set(names)) != len(names):
            raise ValueError("search space parameter names must be unique")
        if self.preload and (
            self.command[0] != PYTHON_PLACEHOLDER
            or len(self.command) < 2
            or not self.command[1].endswith(".py")
        ):
            raise ValueError(
                f"preload needs a command of the form ['{PYTHON_PLACEHOLDER}', 'script.py', ...]"
            )
        params_path = Path(self.params_file)
        if params_path.is_absolute() or ".." in params_path.parts:
            raise ValueError("paramsFile must be a relative path inside candidate/")
        for glob in self.editable:
            if glob.startswith("/") or "\\" in glob or ".." in glob.split("/"):
                raise ValueError(
                    f"editable glob {glob!r} must be a relative path inside candidate/"
                )
        return self

    @property
    def scored_by_candidate(self) -> bool:
        """A code task without a scorer: the candidate's own code prints its metric."""
        return bool(self.editable) and self.score is None

    def scoring_problem(self) -> str | None:
        """Why this task cannot be measured honestly, or ``None``: a code task's candidate
        could print any metric it likes, so it needs a scorer (or says it is self-scored)."""
        if self.scored_by_candidate and not self.self_scored:
            return (
                "a code task (editable files) must be scored by a scorer the candidate "
                f"never sees: add `score` (a command run in {SCORER_DIR}/ that reads the "
                "outputs in $ZEROSHOT_OUTPUT_DIR and prints the metric), or declare "
                "`selfScored: true`"
            )
        return None

    def is_editable(self, path: str) -> bool:
        """Whether a change may edit ``path`` (relative to ``candidate/``)."""
        return any(fnmatch.fnmatchcase(path, glob) for glob in self.editable)

    def parameter(self, name: str) -> SearchParameter:
        return next(p for p in self.search_space if p.name == name)

    def check_params(self, params: dict[str, Any]) -> Params:
        """Exactly the search-space parameters of ``params``, each checked against its domain."""
        missing = [p.name for p in self.search_space if p.name not in params]
        if missing:
            raise ValueError(f"missing parameters: {', '.join(missing)}")
        return {p.name: p.check(params[p.name]) for p in self.search_space}

    def embedded_agents_problem(self) -> str | None:
        """Why the embedded (``local``) agents cannot research this task, or ``None``: they
        propose parameters only, so a task without a search space is beyond them."""
        if self.search_space:
            return None
        return (
            f"task {self.name} has no searchSpace: the embedded agents search parameters "
            f"only; run it with --harness claude|codex|openai"
        )

    def gain(self, incumbent: float, candidate: float) -> float:
        """How much better ``candidate`` is than ``incumbent`` (positive = better)."""
        return incumbent - candidate if self.direction == "minimize" else candidate - incumbent

    def meets_target(self, value: float) -> bool:
        if self.target is None:
            return False
        return value <= self.target if self.direction == "minimize" else value >= self.target


@dataclass(frozen=True)
class ResearchTask:
    """A loaded, checked task folder."""

    root: Path
    spec: TaskSpec
    start_params: Params

    @property
    def candidate_dir(self) -> Path:
        return self.root / CANDIDATE_DIR

    @property
    def scorer_dir(self) -> Path:
        return self.root / SCORER_DIR

    def require_search_space(self) -> None:
        """Raise :class:`NoSearchSpace` (its message is one line) when the embedded agents
        cannot research this task."""
        problem = self.spec.embedded_agents_problem()
        if problem is not None:
            raise NoSearchSpace(problem)


def load_task(path: str | Path) -> ResearchTask:
    """Load and check a task folder; raises :class:`TaskError` saying what is wrong."""
    root = Path(path).resolve()
    if not root.is_dir():
        raise TaskError(f"research task {root}: not a directory")
    task_file = root / TASK_FILE
    try:
        stat = task_file.stat()
    except FileNotFoundError:
        raise TaskError(f"research task {root}: {TASK_FILE} is missing") from None
    spec = _read_spec(task_file, (stat.st_ino, stat.st_mtime_ns, stat.st_size))
    problem = spec.scoring_problem()
    if problem is not None:
        raise TaskError(f"research task {root}: {problem}")
    candidate = root / CANDIDATE_DIR
    if not candidate.is_dir() or not any(candidate.iterdir()):
        raise TaskError(f"research task {root}: {CANDIDATE_DIR}/ is missing or empty")
    if spec.score is not None and not (root / SCORER_DIR).is_dir():
        raise TaskError(f"research task {root}: `score` runs in {SCORER_DIR}/, which is missing")
    params_path = candidate / spec.params_file
    if not spec.search_space and not params_path.exists():
        return ResearchTask(root=root, spec=spec, start_params={})  # a code task
    if not params_path.exists():
        raise TaskError(f"research task {root}: {CANDIDATE_DIR}/{spec.params_file} is missing")
    try:
        params = loads_document(read_text(params_path), yaml_allowed=False)
    except DocumentError as exc:
        raise TaskError(
            f"research task {root}: {CANDIDATE_DIR}/{spec.params_file} is not JSON: {exc}"
        ) from None
    if not isinstance(params, dict):
        raise TaskError(f"research task {root}: {spec.params_file} must hold a JSON object")
    try:
        start = spec.check_params(params)
    except ValueError as exc:
        raise TaskError(f"research task {root}: {spec.params_file}: {exc}") from exc
    return ResearchTask(root=root, spec=spec, start_params=start)


@functools.lru_cache(maxsize=64)
def _read_spec(task_file: Path, stamp: tuple[int, int, int]) -> TaskSpec:
    """Parse ``task.yaml`` once per version of the file (``stamp``): every agent call loads
    the task, and parsing YAML costs more than the rest of a round's bookkeeping."""
    root = task_file.parent
    try:
        document = loads_document(read_text(task_file))
    except DocumentError as exc:
        raise TaskError(f"research task {root}: {TASK_FILE} cannot be read: {exc}") from exc
    if not isinstance(document, dict):
        raise TaskError(f"research task {root}: {TASK_FILE} must be a mapping of fields")
    try:
        return TaskSpec.from_wire(document)
    except ValidationError as exc:
        raise TaskError(f"research task {root}: {TASK_FILE} is invalid:\n{_describe(exc)}") from exc


_PACKAGE = Path(__file__).resolve().parent.parent
BUNDLED_TASKS = next(
    (
        d
        for d in (_PACKAGE / "research_templates", _PACKAGE.parent / "research_templates")
        if d.is_dir()
    ),
    _PACKAGE / "research_templates",
)
"""The bundled research tasks: inside the installed package, or the source tree's
``research_templates/``."""


def bundled_tasks() -> list[str]:
    """Names of the bundled research tasks, e.g. ``["branin", "rosenbrock", "svc-digits"]``."""
    if not BUNDLED_TASKS.is_dir():
        return []
    return sorted(d.name for d in BUNDLED_TASKS.iterdir() if (d / TASK_FILE).is_file())


def resolve_task(task: str, workspace: str | Path) -> ResearchTask:
    """Load ``task`` as given in an agent input: relative paths are inside the workspace; a
    bare name that is no folder there is a bundled task (``rosenbrock``)."""
    path = Path(task)
    if path.is_absolute():
        return load_task(path)
    inside = Path(workspace) / path
    if inside.exists():
        return load_task(inside)
    names = bundled_tasks()
    if task in names:
        return load_task(BUNDLED_TASKS / task)
    try:
        return load_task(inside)
    except TaskError as missing:
        if len(path.parts) != 1:  # a path, not a name
            raise
        raise TaskError(
            f"{missing}, and no bundled task is named {task!r} (bundled: {', '.join(names)})"
        ) from None


def params_key(params: Params) -> str:
    """A canonical text form of ``params``, for recognising a parameter set already tried."""
    return json.dumps(params, sort_keys=True)


def _describe(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        lines.append(f"  {where}: {error['msg']}")
    return "\n".join(lines)
