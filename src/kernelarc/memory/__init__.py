"""kernelarc.memory: the campaign database, the shared findings and the user's long-term memory.

Imports without torch; depends only on `kernelarc.guard.types`, `kernelarc.task.model` and
`kernelarc.errors` (dependencies point cli -> campaign -> agents, guard, memory -> task, roofline).
"""

from kernelarc.memory.errors import RetentionSpecError, StoreError, UnknownFindingError
from kernelarc.memory.findings import (
    DEFAULT_RETENTION, UNBOUNDED, Finding, FindingKind, Recall, RetentionPolicy, finding_from_verdict, recall,
)
from kernelarc.memory.longterm import LongTermMemory, longterm_path
from kernelarc.paths import HOME_ENV, user_cache_dir, user_data_dir
from kernelarc.memory.records import (
    AgentRecord, AgentState, CampaignMeta, CampaignStatus, CandidateRecord, Counts, EvaluationRecord, EventRecord,
    LlmCallRecord, VerdictOutcome,
)
from kernelarc.memory.store import Store
from kernelarc.memory.text import CLAIM_CAP, REASON_CAP, REFLECTION_CAP, STRATEGY_CAP, clip_text

__all__ = [
    "Store", "LongTermMemory", "longterm_path",
    "CampaignMeta", "CampaignStatus", "AgentRecord", "AgentState", "CandidateRecord", "EvaluationRecord",
    "EventRecord", "LlmCallRecord", "Counts", "VerdictOutcome",
    "Finding", "FindingKind", "finding_from_verdict", "RetentionPolicy", "UNBOUNDED", "DEFAULT_RETENTION",
    "Recall", "recall",
    "clip_text", "STRATEGY_CAP", "CLAIM_CAP", "REFLECTION_CAP", "REASON_CAP",
    "HOME_ENV", "user_data_dir", "user_cache_dir",
    "StoreError", "UnknownFindingError", "RetentionSpecError",
]
