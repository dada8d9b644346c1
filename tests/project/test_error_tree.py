"""One error tree: every exception class of the two packages sits in one family of
``zeroshot_kernel.exceptions`` (never on the root directly), keeps the built-in base callers
catch, and appears in the tree that module's docstring draws, under its real parent."""

from __future__ import annotations

import ast
import functools
import importlib
import re
from pathlib import Path

import pytest

from zeroshot_kernel import exceptions
from zeroshot_kernel.exceptions import (
    InvalidInput,
    NotFound,
    OperationFailed,
    Refused,
    Unavailable,
    ZeroshotError,
)
from zeroshot_kernel.harness.agent_cli import CliMissing
from zeroshot_kernel.lab_server.workspaces import OutsideRoot
from zeroshot_kernel.ledger.errors import LedgerError

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "zeroshot_kernel": ROOT / "zeroshot_kernel",
    "zeroshot_widgets": ROOT / "widgets" / "zeroshot_widgets",
}
FAMILIES = (InvalidInput, NotFound, Unavailable, Refused, OperationFailed)

# Exceptions that are not ZeroshotErrors, and why.
OUTSIDE_THE_ROOT = {
    # control flow inside the controller: unwinds its loop on a signal, never escapes it
    "zeroshot_kernel.engine.controller.Interrupted",
}

# On the root beside the families: markers of where an error comes from, never raised
# themselves; every subclass also derives from a family.
MARKERS = {"zeroshot_kernel.ledger.errors.LedgerError"}

# The built-in base each exception has: it must keep it, so that ``except ValueError`` (or
# LookupError, ...) around a call keeps working.
BUILT_IN_BASES: dict[str, type[BaseException]] = {
    "zeroshot_kernel.admission.worker_registry.RegistryError": LookupError,
    "zeroshot_kernel.auto_research.adoption.AdoptionRefused": RuntimeError,
    "zeroshot_kernel.auto_research.diffs.DiffError": ValueError,
    "zeroshot_kernel.auto_research.measure.BaselineFailed": RuntimeError,
    "zeroshot_kernel.auto_research.restore.RestoreError": ValueError,
    "zeroshot_kernel.auto_research.studies.catalog.StudyError": ValueError,
    "zeroshot_kernel.auto_research.task.TaskError": ValueError,
    "zeroshot_kernel.batch.parameters.ParameterError": ValueError,
    "zeroshot_kernel.batch.outputs.OutputOutsideWorkspace": ValueError,
    "zeroshot_kernel.batch.storage.BatchNotFound": LookupError,
    "zeroshot_kernel.client.AdmissionRejected": ValueError,
    "zeroshot_kernel.client.RunHeld": RuntimeError,
    "zeroshot_kernel.contract.canonical.CanonicalError": ValueError,
    "zeroshot_kernel.contract.worker_descriptors.WorkerContractViolation": ValueError,
    "zeroshot_kernel.delivery.git.GitError": RuntimeError,
    "zeroshot_kernel.delivery.github.GitHubError": RuntimeError,
    "zeroshot_kernel.delivery.worktree.DeliveryRefused": RuntimeError,
    "zeroshot_kernel.engine.controller.LeaseUnavailable": RuntimeError,
    "zeroshot_kernel.engine.controller.LeaseLost": RuntimeError,
    "zeroshot_kernel.harness.agent_cli.CliMissing": FileNotFoundError,
    "zeroshot_kernel.harness.registry.HarnessUnavailable": LookupError,
    "zeroshot_kernel.lab_server.inputs.BadInput": ValueError,
    "zeroshot_kernel.lab_server.workspaces.OutsideRoot": PermissionError,
    "zeroshot_kernel.ledger.errors.PayloadRejected": ValueError,
    "zeroshot_kernel.ledger.errors.InvalidArgument": ValueError,
    "zeroshot_kernel.ledger.errors.InvalidCursor": ValueError,
    "zeroshot_kernel.ledger.errors.RunNotFound": LookupError,
    "zeroshot_kernel.ledger.errors.LedgerUnavailable": RuntimeError,
    "zeroshot_kernel.profiles.ProfileNotFound": LookupError,
    "zeroshot_kernel.profiles.ProfileExists": ValueError,
    "zeroshot_kernel.software_change.review.classify.ClassificationFailed": RuntimeError,
    "zeroshot_kernel.software_change.review.lifecycle.LifecycleRefused": ValueError,
    "zeroshot_kernel.software_change.trust.TrustError": RuntimeError,
    "zeroshot_kernel.targets.TargetError": ValueError,
}


@functools.cache
def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in the two packages, found by reading each module's
    source (namespace sub-packages included) and importing the module that defines it (once:
    it imports the whole package)."""
    found: dict[str, type[BaseException]] = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            if path.name == "__main__.py":
                continue
            parts = path.relative_to(folder).with_suffix("").parts
            module = ".".join((package, *parts)).removesuffix(".__init__")
            classes = [
                node.name
                for node in ast.parse(path.read_text()).body
                if isinstance(node, ast.ClassDef)
            ]
            if not classes:
                continue
            loaded = importlib.import_module(module)
            for name in classes:
                value = getattr(loaded, name)
                if isinstance(value, type) and issubclass(value, BaseException):
                    found[f"{module}.{name}"] = value
    return found


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__name__}"


def test_every_exception_sits_in_one_family_and_keeps_its_built_in_base() -> None:
    found = _exception_classes()
    assert len(found) > 70
    outside = sorted(name for name, cls in found.items() if not issubclass(cls, ZeroshotError))
    assert outside == sorted(OUTSIDE_THE_ROOT)
    placed = {_qualified(cls) for cls in (ZeroshotError, *FAMILIES)} | MARKERS
    for name, cls in found.items():
        if name in OUTSIDE_THE_ROOT or name in placed:
            continue
        families = [family.__name__ for family in FAMILIES if issubclass(cls, family)]
        assert len(families) == 1, (name, families)
        assert ZeroshotError not in cls.__bases__, f"{name} hangs on the root directly"
    for name, base in BUILT_IN_BASES.items():
        assert issubclass(found[name], base), (name, base)
    ledger = {name: cls for name, cls in found.items() if ".ledger.errors." in name}
    assert all(issubclass(cls, LedgerError) for cls in ledger.values()), ledger


def test_the_issues_examples_are_in_their_families() -> None:
    from zeroshot_kernel.ledger import LedgerUnavailable, RunNotFound

    assert issubclass(RunNotFound, NotFound) and issubclass(RunNotFound, LookupError)
    assert issubclass(LedgerUnavailable, Unavailable)
    assert issubclass(RunNotFound, LedgerError) and issubclass(LedgerUnavailable, LedgerError)


@pytest.mark.parametrize(
    ("error", "built_in", "family"),
    [(CliMissing, FileNotFoundError, Unavailable), (OutsideRoot, PermissionError, Refused)],
)
def test_an_os_error_in_a_family_keeps_its_errno_and_filename(
    error: type[OSError], built_in: type[OSError], family: type[ZeroshotError]
) -> None:
    made = error(2, "No such file or directory", "claude")
    assert isinstance(made, built_in) and isinstance(made, family)
    assert (made.errno, made.filename) == (2, "claude")
    assert str(made) == "[Errno 2] No such file or directory: 'claude'"


_LINE = re.compile(
    r"^    (?P<indent>(?:  )*)(?P<name>\w+)(?P<extras>(?: \+ \w+)*) +(?P<module>[\w.]+)$"
)


def _drawn_tree() -> list[tuple[int, str, list[str], str]]:
    """(depth, class name, other direct bases, module) of each line of the docstring's
    tree: the literal block after ``The whole tree``."""
    doc = exceptions.__doc__ or ""
    block = doc[doc.index("The whole tree") :].split("::\n\n", 1)[1].split("\n\n", 1)[0]
    lines = []
    for line in block.splitlines():
        match = _LINE.match(line)
        assert match, f"not a tree line: {line!r}"
        extras = [extra for extra in match["extras"].split(" + ") if extra]
        module = match["module"]
        if not module.startswith("zeroshot_widgets."):
            module = f"zeroshot_kernel.{module}"
        lines.append((len(match["indent"]) // 2, match["name"], extras, module))
    return lines


def test_the_docstring_draws_every_class_once_under_its_real_parent() -> None:
    found = _exception_classes()
    drawn = _drawn_tree()
    names = [f"{module}.{name}" for _, name, _, module in drawn]
    assert len(names) == len(set(names))
    assert sorted(names) == sorted(set(found) - OUTSIDE_THE_ROOT)
    parents: list[type[BaseException]] = []  # the open line at each depth
    for (depth, _, extras, _), name in zip(drawn, names, strict=True):
        cls = found[name]
        del parents[depth:]
        assert len(parents) == depth, f"{name} is indented under nothing"
        others = [base for base in cls.__bases__ if base is not Exception]
        if parents:
            assert parents[-1] in cls.__bases__, f"{name} is drawn under {parents[-1]}"
            others.remove(parents[-1])
        assert extras == [base.__name__ for base in others], name
        parents.append(cls)
