"""What an LLM research agent is given, and what trusted code takes from its turn.

The embedded agents read the study's records themselves; a model on the claude, codex or
openai harness is briefed by the engine (see :mod:`zeroshot_kernel.harness.roles`):

- every role: the charter (metric, direction, target, search space, editable files), the
  incumbent and the study's most recent decided rounds, as trusted code recorded them;
- scouts and the researcher: the editable files of the candidate the round builds on (the
  incumbent), within :data:`FILE_BUDGET_BYTES`; the reviewer gets the change and the
  engine's evidence (with the diff) as its input, and the charter and rounds here.

A researcher with tools (claude, codex) works in a scratch checkout of the incumbent's
verified bytes under ``.zeroshot/scratch/`` (never the records, never the task folder).
After its turn trusted code collects what changed there as the change's edits, whatever
the reply said about edits, and sets the change's parent to the checkout's candidate. A
turn during which the study's records or the task folder changed is refused and recorded.
Nothing here trusts a number a model wrote: the brief is read from the records.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from zeroshot_kernel.auto_research.candidates import build_candidate, restore_candidate
from zeroshot_kernel.auto_research.change import MAX_EDITS, MAX_FILE_BYTES
from zeroshot_kernel.auto_research.markdown_records import charter
from zeroshot_kernel.auto_research.measure import BASELINE_ID
from zeroshot_kernel.auto_research.noise_floor import fmt
from zeroshot_kernel.auto_research.records import RECORDS_DIR, ResearchRecords
from zeroshot_kernel.auto_research.studies.catalog import StudyError, records_for
from zeroshot_kernel.auto_research.task import ResearchTask, TaskError, resolve_task
from zeroshot_kernel.contract.outcome import VerifiedOutcome, error
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult
from zeroshot_kernel.harness.roles import Preparation, RoleError

FILE_BUDGET_BYTES = 24_000
"""How many bytes of the parent's editable files a brief quotes (the rest are listed)."""
RECENT_ROUNDS = 8
SCRATCH_DIR = Path(".zeroshot") / "scratch"
_IGNORED_PARTS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


class _Briefing:
    """The records a brief is read from."""

    def __init__(self, request: ExecutionRequest) -> None:
        value = request.input if isinstance(request.input, dict) else {}
        task, study = value.get("task"), value.get("study")
        if not isinstance(task, str) or not isinstance(study, str):
            raise RoleError("the node's input names no task and study")
        try:
            self.task: ResearchTask = resolve_task(task, request.workspace)
            self.records: ResearchRecords = records_for(request.workspace, study)
            self.state = self.records.snapshot()
        except (TaskError, StudyError, OSError, ValueError) as bad:
            raise RoleError(f"{type(bad).__name__}: {bad}") from None

    @property
    def parent_id(self) -> str:
        incumbent = self.state.incumbent
        return incumbent.candidate_id if incumbent else BASELINE_ID

    @property
    def parent_source(self) -> Path:
        """The parent's recorded source, or the task's starting files before the baseline
        is stored."""
        source = self.records.source_dir(self.parent_id)
        return source if source.is_dir() else self.task.candidate_dir

    def text(self, *, files: bool) -> str:
        parts = [charter(self.task), self._incumbent(), self._rounds()]
        if files:
            parts.append(self._files())
        return "\n".join(part for part in parts if part)

    def _incumbent(self) -> str:
        incumbent = self.state.incumbent
        if incumbent is None:
            return (
                f"## Incumbent\n\nNone measured yet: the engine measures the starting "
                f"candidate as {BASELINE_ID} before the first change.\n"
            )
        manifest = self.state.candidates.get(incumbent.candidate_id)
        params = json.dumps(manifest.params, sort_keys=True) if manifest else "{}"
        return (
            f"## Incumbent\n\n{incumbent.candidate_id} (adopted in round "
            f"{incumbent.adopted_round}): {self.task.spec.metric} {fmt(incumbent.metric)} "
            f"measured by the engine; parameters {params}\n"
        )

    def _rounds(self) -> str:
        results = self.state.results()[-RECENT_ROUNDS:]
        if not results:
            return "## Recent rounds\n\nNone decided yet.\n"
        lines = ["## Recent rounds (measured by the engine)", ""]
        for r in results:
            gate = f", gate {r.gate_decision.replace('_', ' ')}" if r.gate_decision else ""
            compared = (
                f"gain {fmt(r.gain)} vs noise floor {fmt(r.noise_floor)} on "
                f"{len(r.metric_repeats)} paired seeds"
                if r.compared
                else "no paired measurement"
            )
            lines.append(
                f"- round {r.round}: {r.candidate_id or '-'} from {r.parent_id or '-'} "
                f"({r.strategy}: {r.approach[:120]}); {r.measure_status}, "
                f"{self.task.spec.metric} {fmt(r.metric)}, {compared}{gate}; {r.disposition}"
            )
        return "\n".join(lines) + "\n"

    def _files(self) -> str:
        spec = self.task.spec
        if not spec.editable:
            return ""
        source = self.parent_source
        editable = sorted(p for p in _files_under(source) if spec.is_editable(p))
        lines = [f"## Editable files of {self.parent_id} (the parent to change)", ""]
        budget = FILE_BUDGET_BYTES
        for path in editable:
            data = (source / path).read_bytes()
            if len(data) > budget:
                lines.append(f"- {path}: {len(data)} bytes, not quoted (over the budget)")
                continue
            budget -= len(data)
            lines += [f"### {path}", "```", data.decode("utf-8", "replace"), "```"]
        return "\n".join(lines) + "\n"


class ScoutRole:
    def prepare(self, request: ExecutionRequest, *, tools: bool) -> Preparation:
        briefing = _Briefing(request)
        return Preparation(
            brief=briefing.text(files=not tools)
            + (
                f"\nYou may read the records under {RECORDS_DIR.as_posix()}/"
                f"{briefing.records.study}/ ; change nothing.\n"
                if tools
                else ""
            )
        )

    def finish(
        self, request: ExecutionRequest, preparation: Preparation, result: HarnessResult
    ) -> HarnessResult:
        return result


class ReviewerRole(ScoutRole):
    def prepare(self, request: ExecutionRequest, *, tools: bool) -> Preparation:
        return Preparation(brief=_Briefing(request).text(files=False))


class ResearcherRole:
    def prepare(self, request: ExecutionRequest, *, tools: bool) -> Preparation:
        briefing = _Briefing(request)
        if not tools:
            return Preparation(
                brief=briefing.text(files=True)
                + (
                    f"\nReturn the change with parentId {briefing.parent_id!r}; give code edits "
                    "in `edits` (whole contents or a unified diff of one editable file).\n"
                )
            )
        checkout = _checkout(request, briefing)
        before = _fingerprint(briefing)
        return Preparation(
            brief=briefing.text(files=False)
            + (
                f"\nYour working directory is a scratch checkout of {briefing.parent_id}'s "
                "verified bytes. Make your change by editing its editable files there; the "
                "engine collects what you changed as the change's edits (leave `edits` "
                f"empty) and measures it. Do not write anywhere else.\n"
            ),
            checkout=checkout,
            state=(briefing, before),
        )

    def finish(
        self, request: ExecutionRequest, preparation: Preparation, result: HarnessResult
    ) -> HarnessResult:
        if preparation.checkout is None or not isinstance(result.outcome, VerifiedOutcome):
            return result
        briefing, before = preparation.state
        after = _fingerprint(briefing)
        touched = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        if touched:
            shown = ", ".join(touched[:3]) + (
                f" and {len(touched) - 3} more" if len(touched) > 3 else ""
            )
            return HarnessResult(
                error("refusal", "policy_denied"),
                f"the researcher wrote outside its scratch checkout ({shown}): the study's "
                "records and the task folder are read-only to it; its change is refused",
                result.usage,
            )
        collected = _collect(briefing, preparation.checkout)
        if isinstance(collected, str):
            return HarnessResult(error("refusal", "policy_denied"), collected, result.usage)
        output = dict(result.outcome.output or {})
        change = dict(output.get("change") or {})
        change["parentId"], change["edits"] = briefing.parent_id, collected
        output["change"] = change
        request.log(
            "system",
            f"collected {len(collected)} edit(s) from the scratch checkout of {briefing.parent_id}",
        )
        return HarnessResult(
            VerifiedOutcome(status="verified", output=output), result.detail, result.usage
        )


SCOUT = ScoutRole()
RESEARCHER = ResearcherRole()
REVIEWER = ReviewerRole()


def _checkout(request: ExecutionRequest, briefing: _Briefing) -> Path:
    """A fresh copy of the parent's verified bytes, at a path stable for the node
    instance (an agent CLI's session belongs to its working directory)."""
    key = hashlib.sha256(f"{request.run_id}/{request.node_instance}".encode()).hexdigest()[:16]
    root = Path(request.workspace).resolve() / SCRATCH_DIR / key
    if root.exists():
        shutil.rmtree(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    parent = briefing.parent_id
    if briefing.records.read_manifest(parent) is None:
        build_candidate(briefing.task, None, root)  # the baseline, not measured yet
        return root
    check = restore_candidate(briefing.records, parent, root)
    if not check.ok:
        raise RoleError(
            f"the recorded bytes of {parent} do not verify: {'; '.join(check.problems[:3])}"
        )
    return root


def _fingerprint(briefing: _Briefing) -> dict[str, tuple[int, int]]:
    """Size and modification time of every file of the study's records and the task
    folder: what a turn must leave as it found it."""
    seen = {}
    for root in (briefing.records.root, briefing.task.root):
        for path in _files_under(root):
            stat = (root / path).lstat()
            seen[f"{root}/{path}"] = (stat.st_size, stat.st_mtime_ns)
    return seen


def _files_under(root: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _IGNORED_PARTS]
        for name in files:
            if not name.endswith(".pyc"):
                found.append((Path(folder) / name).relative_to(root).as_posix())
    return found


def _collect(briefing: _Briefing, checkout: Path) -> list[dict[str, Any]] | str:
    """The checkout's differences from its parent as edits (wire form), or why they
    cannot be a change. New files the task does not mark editable are the agent's own
    by-products (an experiment's output) and are left out."""
    spec = briefing.task.spec
    parent = briefing.parent_source
    before, after = set(_files_under(parent)), set(_files_under(checkout))
    edits: list[dict[str, Any]] = []
    for path in sorted(before | after):
        new = checkout / path
        if path in after and new.is_symlink():
            return f"the researcher left a symbolic link in its checkout: {path}"
        if path not in after:
            edits.append({"path": path, "kind": "delete"})
            continue
        if path not in before and not spec.is_editable(path):
            continue
        data = new.read_bytes()
        if path in before and data == (parent / path).read_bytes():
            continue
        if len(data) > MAX_FILE_BYTES:
            return f"{path} holds {len(data)} bytes; a file of a change may hold {MAX_FILE_BYTES}"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return f"{path} is not UTF-8 text; a change edits text files"
        edits.append({"path": path, "kind": "contents", "text": text})
    if len(edits) > MAX_EDITS:
        return f"the checkout changed {len(edits)} files; a change holds at most {MAX_EDITS}"
    return edits
