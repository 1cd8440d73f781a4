"""The guard: everything that judges a candidate (static gate, sandboxed side processes, correctness, timing, decision).

Names are re-exported lazily, so importing `kernelarc.guard.types` (as the memory does) does not pull
in the runner, the gate or the task loaders; nothing here imports torch.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Candidate": "candidate", "CandidateKind": "candidate", "candidate_from_source": "candidate",
    "load_candidate": "candidate", "solution_candidate": "candidate",
    "GuardInternalError": "judge", "evaluate": "judge", "resolve_device": "judge", "Judge": "judge",
    "isolation": "judge", "Isolation": "judge", "SandboxRequired": "judge",
    "GateFinding": "gate", "check_candidate": "gate", "check_source": "gate",
    "GuardSettings": "settings", "Cutoff": "cutoff", "EvaluationCut": "cutoff",
    "Evaluation": "types", "Status": "types", "TimingMethod": "types", "Verdict": "types", "WorkloadResult": "types",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"kernelarc.guard.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'kernelarc.guard' has no attribute {name!r}")
