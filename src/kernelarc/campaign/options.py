"""The options of one campaign, validated once; stored in the campaign database so `--resume` reuses them."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kernelarc.guard.settings import GuardSettings
from kernelarc.memory.findings import RetentionPolicy


class StopReason(str, Enum):
    """Why a campaign stopped."""

    BUDGET = "budget"
    """`--budget` candidates reached the guard."""
    TIME_LIMIT = "time_limit"
    """`--time-limit` seconds passed."""
    TARGET_SOL = "target_sol_score"
    """The leader reached `--target-sol` (CUDA only: SOL is unknown on the CPU)."""
    ALL_RETIRED = "all_agents_retired"
    """Every agent was retired (plateaus, nothing more to try, or repeated failures)."""
    MAX_COST = "max_cost"
    """LLM backends: `--max-cost` dollars were spent."""
    INTERRUPTED = "interrupted"
    """Ctrl-C: once, after the evaluations in flight; twice, at once (they are left pending)."""
    INVALID_REFERENCE = "invalid_reference"
    """A baseline got INVALID_REFERENCE: the reference cannot run (an error, out of memory, a deadline)
    or gives NaN/Inf, so nothing can be judged against it. No agent was asked."""
    BASELINES_FAILED = "baselines_failed"
    """Every baseline failed (e.g. past a deadline): no candidate could be judged. No agent was asked."""


class CampaignOptions(BaseModel):
    """Everything `kernelarc optimize` was asked to do."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agents: int = Field(default=4, ge=1, le=64)
    """Number of concurrent agents."""
    strategies: tuple[str, ...] = ()
    """Strategy per agent (cycled); empty = the default spread for the task's kernel type."""
    backend: str = "builtin"
    """Agent backend: builtin, openai, anthropic, cli (scripted in tests)."""
    backend_options: dict[str, Any] = Field(default_factory=dict)
    """Passed to the backend's factory maker (model, config path, ...)."""
    budget: int = Field(default=100, ge=1)
    """Candidates that may reach the guard (crashes and gate rejections count; duplicates and refused drafts do not)."""
    time_limit_s: float | None = Field(default=None, gt=0)
    """Wall-clock limit for this invocation, final timings included (`--resume --time-limit` sets a new one):
    evaluations in flight when it passes are cut and left pending."""
    plateau: int = Field(default=4, ge=1)
    """Consecutive benchmarked non-improvements before the agent must draft."""
    memory: str = "16"
    """Retention per kernel type: `unbounded`, `N` or `WINS/TRAPS`."""
    longterm: bool = True
    """Recall from and add to the user-level long-term memory."""
    device: str = "auto"
    """auto, cpu, cuda or cuda:N (auto on a multi-GPU machine uses every GPU, one lock each)."""
    seed: int = 0
    """Campaign seed: agents' seeds and every evaluation's input seeds derive from it."""
    target_sol: float | None = Field(default=None, gt=0, le=1)
    """Stop when the leader's SOL score reaches this."""
    max_cost: float | None = Field(default=None, gt=0)
    """Stop when LLM spending reaches this many dollars."""
    unsafe_no_sandbox: bool = False
    """Judge LLM and coding-agent candidates even where no OS sandbox can start (process separation only)."""
    compile_baseline: bool = True
    """Measure torch.compile as a baseline candidate (slow to compile on the CPU)."""
    recall_limit: int = Field(default=8, ge=0)
    """Findings of each kind shown to an agent per step."""
    history: int = Field(default=6, ge=0)
    """Recent verdicts shown to an agent per step."""
    rounds: int | None = Field(default=None, ge=1)
    """Correctness rounds per workload (None: the task's default)."""
    timing: Literal["auto", "device", "wall"] = "auto"
    """Which latency decides (GuardSettings.timing): auto = device time for SOL-ExecBench, wall for KernelBench."""
    atol: float | None = Field(default=None, ge=0)
    """Absolute tolerance for every output (None: the task's or its format's)."""
    rtol: float | None = Field(default=None, ge=0)
    """Relative tolerance for every output (None: the task's or its format's)."""
    matched_ratio: float | None = Field(default=None, gt=0, le=1)
    """Fraction of elements that must be within tolerance (None: the task's or its format's)."""
    timeout_s: float | None = Field(default=None, gt=0)
    """`--timeout`: each evaluation's compile and run deadlines, the reference's twice it
    (GuardSettings.deadlines); None: the guard's defaults."""

    def guard_settings(self) -> GuardSettings:
        """The guard's knobs these options set."""
        return GuardSettings(rounds=self.rounds, timing=self.timing, atol=self.atol, rtol=self.rtol,
                             matched_ratio=self.matched_ratio,
                             **GuardSettings.deadlines(self.timeout_s))

    @field_validator("memory")
    @classmethod
    def _validate_memory(cls, v: str) -> str:
        return RetentionPolicy.parse(v).spec


__all__ = ["CampaignOptions", "StopReason"]
