"""torch.compile in a chosen mode as a candidate (the bench measures max-autotune-no-cudagraphs).

Built from the campaign's own compile baseline with only the mode changed, so the default-mode and
max-autotune rows of a table differ in that and nothing else. Imports without torch.
"""

from __future__ import annotations

from kernelarc.campaign.baselines import COMPILE, baseline_candidates
from kernelarc.guard.candidate import Candidate, candidate_from_source
from kernelarc.task.model import Task

MAX_AUTOTUNE_MODE = "max-autotune-no-cudagraphs"
"""Inductor's autotuned mode without CUDA graphs (graphs would hide launch costs the guard times)."""
_SECTION = "# --- kernelarc baseline"
_CALL = "torch.compile("


def compile_mode_candidate(task: Task, mode: str) -> Candidate:
    """The campaign's torch.compile baseline of `task` with `torch.compile(..., mode=mode)`."""
    source = baseline_candidates(task, include_compile=True)[COMPILE].source
    section, call = source.rfind(_SECTION), source.rfind(_CALL)
    if section < 0 or call < section:
        raise RuntimeError(f"kernelarc.campaign.baselines no longer ends its compile baseline with a {_SECTION!r} "
                           f"section calling {_CALL!r}: update kernelarc.bench.baselines")
    helper = f"def _kernelarc_compile(fn, **options):\n    return torch.compile(fn, mode={mode!r}, **options)\n\n\n"
    baseline = source[section:].replace("(default mode)", f"(mode {mode})").replace(_CALL, "_kernelarc_compile(")
    return candidate_from_source(source[:section] + helper + baseline, task,
                                 name=f"baseline_compile_{mode.replace('-', '_')}")


__all__ = ["MAX_AUTOTUNE_MODE", "compile_mode_candidate"]
