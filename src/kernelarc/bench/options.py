"""What `kernelarc bench` was asked to do, and the campaign options each run derives from it.

The ablation arms live here too: each is a small change of the same options, so the arms differ in
who remembers what and in nothing else (same budget, backend, device, time limit). Imports without torch.
"""

from __future__ import annotations

import hashlib
import json
from enum import Enum
from typing import Any

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kernelarc.campaign.options import CampaignOptions
from kernelarc.memory.findings import RetentionPolicy

BOUNDED_MEMORY = "16"
"""Retention of the bounded-memory ablation arm: 16 findings of each kind per kernel type."""
UNBOUNDED_MEMORY = "unbounded"


class Arm(str, Enum):
    """An arm of the ablation, all at the same candidate budget."""

    SOLO_PRIVATE = "solo_private"
    """One agent; its memory holds only its own findings (unbounded, no long-term memory)."""
    SHARED_BOUNDED = "shared_bounded"
    """N agents sharing findings, at most 16 of each kind per kernel type."""
    SHARED_UNBOUNDED = "shared_unbounded"
    """N agents sharing every finding."""


class BenchOptions(BaseModel):
    """Everything `kernelarc bench` was asked to do (the suite and output dir are arguments of the run)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agents: int = Field(default=4, ge=1, le=64)
    """Agents per campaign (the ablation's N)."""
    budget: int = Field(default=100, ge=1)
    """Candidates per campaign."""
    time_limit_s: float | None = Field(default=None, gt=0)
    """Wall-clock limit per campaign."""
    backend: str = "builtin"
    """Agent backend of every campaign."""
    backend_options: dict[str, Any] = Field(default_factory=dict)
    """Passed to the backend's factory maker."""
    device: str = "auto"
    """auto, cpu, cuda or cuda:N."""
    seed: int = 0
    """Seed of the main runs and the first ablation seed (seed k of the ablation is seed + k)."""
    seeds: int = Field(default=3, ge=1)
    """Ablation: campaigns per arm and task, one per seed."""
    memory: str = BOUNDED_MEMORY
    """Retention of the main runs: `unbounded`, `N` or `WINS/TRAPS`."""
    longterm: bool = False
    """Let campaigns recall from and add to the user's long-term memory. Off by default: with it on,
    a task's result would depend on the tasks (and suites) run before it."""
    compile_baselines: bool = True
    """Measure torch.compile (default and max-autotune-no-cudagraphs); off only for quick CPU runs."""
    unsafe_no_sandbox: bool = False
    """Judge LLM and coding-agent candidates even where no OS sandbox can start."""
    rounds: int | None = Field(default=None, ge=1)
    """Correctness rounds per workload (None: the task's default)."""
    timing: Literal["auto", "device", "wall"] = "auto"
    """Which latency decides (GuardSettings.timing)."""
    timeout_s: float | None = Field(default=None, gt=0)
    """`--timeout`: each evaluation's compile and run deadlines (GuardSettings.deadlines); None: the guard's."""

    @field_validator("memory")
    @classmethod
    def _validate_memory(cls, v: str) -> str:
        return RetentionPolicy.parse(v).spec

    def campaign_options(self) -> CampaignOptions:
        """The options of a main run."""
        return CampaignOptions(
            agents=self.agents, backend=self.backend, backend_options=self.backend_options, budget=self.budget,
            time_limit_s=self.time_limit_s, memory=self.memory, longterm=self.longterm, device=self.device,
            seed=self.seed, compile_baseline=self.compile_baselines, rounds=self.rounds, timing=self.timing,
            timeout_s=self.timeout_s, unsafe_no_sandbox=self.unsafe_no_sandbox)

    def arm_options(self, arm: Arm, seed_index: int) -> CampaignOptions:
        """The options of one ablation campaign: `arm` at seed `seed + seed_index`, never long-term memory
        (it would carry what one arm learned into the next)."""
        agents, memory = {Arm.SOLO_PRIVATE: (1, UNBOUNDED_MEMORY), Arm.SHARED_BOUNDED: (self.agents, BOUNDED_MEMORY),
                          Arm.SHARED_UNBOUNDED: (self.agents, UNBOUNDED_MEMORY)}[arm]
        return self.campaign_options().model_copy(update={
            "agents": agents, "memory": memory, "longterm": False, "seed": self.seed + seed_index})


def options_key(campaign: CampaignOptions, max_autotune: bool) -> str:
    """Fingerprint of everything that decides a row: a stored row with another key is run again."""
    unset = {"timeout_s"} if campaign.timeout_s is None else set()  # keys of rows stored before --timeout existed hold
    text = json.dumps({"campaign": campaign.model_dump(mode="json", exclude=unset), "max_autotune": max_autotune},
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


__all__ = ["Arm", "BOUNDED_MEMORY", "BenchOptions", "UNBOUNDED_MEMORY", "options_key"]
