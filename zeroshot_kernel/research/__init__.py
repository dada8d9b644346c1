"""Auto-research, the research side: task folders, experiments, records and local agents.

The engine wires these into the auto-research graph; everything here is plain typed Python
whose inputs and outputs are JSON-ready (``.to_wire()`` / ``.from_wire()``). The agents
live in :mod:`zeroshot_kernel.research.agents` (imported on demand: they load optuna).
"""

from zeroshot_kernel.research.candidates import (
    BytesCheck,
    content_sha256,
    repair_candidate,
    restore_candidate,
    store_candidate,
    tree_hashes,
    verify_candidate,
    verify_tree,
)
from zeroshot_kernel.research.experiment import (
    ExperimentResult,
    parse_metric,
    run_experiment,
    run_repeats,
)
from zeroshot_kernel.research.protocol import (
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
from zeroshot_kernel.research.reconsider import reconsideration_due
from zeroshot_kernel.research.records import (
    CandidateManifest,
    IncumbentRecord,
    Measurement,
    ResearchRecords,
    ResearchState,
    RoundPass,
    RoundRecord,
)
from zeroshot_kernel.research.restore import Restored, RestoreError, restore_candidate_source
from zeroshot_kernel.research.studies import (
    StudyError,
    StudySummary,
    check_study_name,
    list_studies,
)
from zeroshot_kernel.research.task import (
    ResearchTask,
    SearchParameter,
    TaskError,
    TaskSpec,
    bundled_tasks,
    load_task,
    resolve_task,
)

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
    "StudyError",
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
    "tree_hashes",
    "verify_candidate",
    "verify_tree",
]
