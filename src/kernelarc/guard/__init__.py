"""The guard: everything that judges a candidate (static gate, isolated worker, correctness, timing, decision).

Importing this package does not import torch; the worker and the in-worker modules do.
"""

from kernelarc.guard.candidate import Candidate, CandidateKind, candidate_from_source, load_candidate
from kernelarc.guard.evaluate import GuardInternalError, evaluate, resolve_device
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.types import Evaluation, Status, TimingMethod, Verdict, WorkloadResult

__all__ = [
    "Candidate", "CandidateKind", "candidate_from_source", "load_candidate",
    "GuardInternalError", "evaluate", "resolve_device", "GuardSettings",
    "Evaluation", "Status", "TimingMethod", "Verdict", "WorkloadResult",
]
