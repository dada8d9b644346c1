"""Auto-research, the research side: task folders, experiments, records and local agents.

The engine wires these into the auto-research graph; everything here is plain typed Python
whose inputs and outputs are JSON-ready (``.to_wire()`` / ``.from_wire()``). The agents
live in :mod:`zeroshot_kernel.auto_research.agents` (imported on demand: they load numpy).

The names below are imported on first use, so loading the feature (listed in
:mod:`zeroshot_kernel.builtins`) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zeroshot_kernel.lazy_exports import load_export as _load_export

if TYPE_CHECKING:
    from zeroshot_kernel.auto_research.candidates import (
        BytesCheck,
        content_sha256,
        repair_candidate,
        restore_candidate,
        store_candidate,
        tree_hashes,
        verify_candidate,
        verify_tree,
    )
    from zeroshot_kernel.auto_research.experiment import (
        ExperimentResult,
        parse_metric,
        run_experiment,
        run_repeats,
    )
    from zeroshot_kernel.auto_research.protocol import (
        REMEASURE,
        STRATEGIES,
        Change,
        Edit,
        Evidence,
        ResearcherInput,
        ResearchResult,
        ReviewerInput,
        ReviewVerdict,
        ScoutInput,
        ScoutProposal,
    )
    from zeroshot_kernel.auto_research.reconsider import (
        reconsideration_due,
    )
    from zeroshot_kernel.auto_research.records import (
        CandidateManifest,
        IncumbentRecord,
        Measurement,
        ResearchRecords,
        ResearchState,
        RoundPass,
        RoundRecord,
    )
    from zeroshot_kernel.auto_research.restore import (
        Restored,
        RestoreError,
        restore_candidate_source,
    )
    from zeroshot_kernel.auto_research.studies.catalog import (
        StudyError,
        StudySummary,
        check_study_name,
        list_studies,
    )
    from zeroshot_kernel.auto_research.studies.export import Study
    from zeroshot_kernel.auto_research.studies.table import StudyRow, study_rows
    from zeroshot_kernel.auto_research.task import (
        ResearchTask,
        SearchParameter,
        TaskError,
        TaskSpec,
        bundled_tasks,
        load_task,
        resolve_task,
    )

_HOMES = {
    "BytesCheck": "zeroshot_kernel.auto_research.candidates",
    "CandidateManifest": "zeroshot_kernel.auto_research.records",
    "Change": "zeroshot_kernel.auto_research.protocol",
    "Edit": "zeroshot_kernel.auto_research.protocol",
    "Evidence": "zeroshot_kernel.auto_research.protocol",
    "ExperimentResult": "zeroshot_kernel.auto_research.experiment",
    "IncumbentRecord": "zeroshot_kernel.auto_research.records",
    "Measurement": "zeroshot_kernel.auto_research.records",
    "REMEASURE": "zeroshot_kernel.auto_research.protocol",
    "ResearchRecords": "zeroshot_kernel.auto_research.records",
    "ResearchResult": "zeroshot_kernel.auto_research.protocol",
    "ResearchState": "zeroshot_kernel.auto_research.records",
    "ResearchTask": "zeroshot_kernel.auto_research.task",
    "ResearcherInput": "zeroshot_kernel.auto_research.protocol",
    "RestoreError": "zeroshot_kernel.auto_research.restore",
    "Restored": "zeroshot_kernel.auto_research.restore",
    "ReviewVerdict": "zeroshot_kernel.auto_research.protocol",
    "ReviewerInput": "zeroshot_kernel.auto_research.protocol",
    "RoundPass": "zeroshot_kernel.auto_research.records",
    "RoundRecord": "zeroshot_kernel.auto_research.records",
    "STRATEGIES": "zeroshot_kernel.auto_research.protocol",
    "ScoutInput": "zeroshot_kernel.auto_research.protocol",
    "ScoutProposal": "zeroshot_kernel.auto_research.protocol",
    "SearchParameter": "zeroshot_kernel.auto_research.task",
    "Study": "zeroshot_kernel.auto_research.studies.export",
    "StudyError": "zeroshot_kernel.auto_research.studies.catalog",
    "StudyRow": "zeroshot_kernel.auto_research.studies.table",
    "StudySummary": "zeroshot_kernel.auto_research.studies.catalog",
    "TaskError": "zeroshot_kernel.auto_research.task",
    "TaskSpec": "zeroshot_kernel.auto_research.task",
    "bundled_tasks": "zeroshot_kernel.auto_research.task",
    "check_study_name": "zeroshot_kernel.auto_research.studies.catalog",
    "content_sha256": "zeroshot_kernel.auto_research.candidates",
    "list_studies": "zeroshot_kernel.auto_research.studies.catalog",
    "load_task": "zeroshot_kernel.auto_research.task",
    "parse_metric": "zeroshot_kernel.auto_research.experiment",
    "reconsideration_due": "zeroshot_kernel.auto_research.reconsider",
    "repair_candidate": "zeroshot_kernel.auto_research.candidates",
    "resolve_task": "zeroshot_kernel.auto_research.task",
    "restore_candidate": "zeroshot_kernel.auto_research.candidates",
    "restore_candidate_source": "zeroshot_kernel.auto_research.restore",
    "run_experiment": "zeroshot_kernel.auto_research.experiment",
    "run_repeats": "zeroshot_kernel.auto_research.experiment",
    "store_candidate": "zeroshot_kernel.auto_research.candidates",
    "study_rows": "zeroshot_kernel.auto_research.studies.table",
    "tree_hashes": "zeroshot_kernel.auto_research.candidates",
    "verify_candidate": "zeroshot_kernel.auto_research.candidates",
    "verify_tree": "zeroshot_kernel.auto_research.candidates",
}

__all__ = [
    "REMEASURE",
    "STRATEGIES",
    "BytesCheck",
    "CandidateManifest",
    "Change",
    "Edit",
    "Evidence",
    "ExperimentResult",
    "IncumbentRecord",
    "Measurement",
    "ResearchRecords",
    "ResearchResult",
    "ResearchState",
    "ResearchTask",
    "ResearcherInput",
    "RestoreError",
    "Restored",
    "ReviewVerdict",
    "ReviewerInput",
    "RoundPass",
    "RoundRecord",
    "ScoutInput",
    "ScoutProposal",
    "SearchParameter",
    "Study",
    "StudyError",
    "StudyRow",
    "StudySummary",
    "TaskError",
    "TaskSpec",
    "bundled_tasks",
    "check_study_name",
    "content_sha256",
    "list_studies",
    "load_task",
    "parse_metric",
    "reconsideration_due",
    "repair_candidate",
    "resolve_task",
    "restore_candidate",
    "restore_candidate_source",
    "run_experiment",
    "run_repeats",
    "store_candidate",
    "study_rows",
    "tree_hashes",
    "verify_candidate",
    "verify_tree",
]


def __getattr__(name: str) -> Any:
    return _load_export(globals(), _HOMES, name)
