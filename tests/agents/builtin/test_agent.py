"""BuiltinAgent: the backend, proposals and reflections, memory and leaderboard use, drafting, and a
short loop with the real guard that improves on a deliberately slow reference."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from pathlib import Path

from kernelarc.agents import Agent, AgentContext, LeaderboardEntry, get_backend
from kernelarc.agents.builtin import BuiltinAgent
from kernelarc.agents.builtin.agent import SOURCE_MARK, builtin_factory
from kernelarc.agents.builtin.notation import parse_points
from kernelarc.guard import Verdict, candidate_from_source, evaluate
from kernelarc.memory.findings import Finding, FindingKind
from kernelarc.strategies import get_strategy
from kernelarc.task.loader import load_task

from tests.agents.builtin.builtin_tasks import FAST_GUARD, example

REPO = Path(__file__).resolve().parents[3]

SLOW_SUM = "kernelbench/slow_sum.py"
GEMM = "kernelbench/gemm_bias_gelu_small.py"


def _context(task, strategy="library", **fields) -> AgentContext:
    return AgentContext(task=task, agent_id="a0", strategy=get_strategy(strategy), **fields)


def _propose(agent, ctx):
    return asyncio.run(agent.propose(ctx))


def test_backend_builds_agents_that_follow_the_protocol():
    make = get_backend("builtin")()
    agent = make("a1", get_strategy("scheduling"), example(GEMM), 5)
    assert isinstance(agent, BuiltinAgent) and isinstance(agent, Agent) and agent.name == "a1"


def test_loop_with_the_guard_finds_a_keep_on_the_slow_sum():
    task = example(SLOW_SUM)
    agent = BuiltinAgent("a0", get_strategy("library"), task, seed=0)
    ctx = _context(task)
    proposal = _propose(agent, ctx)
    assert proposal.source.startswith(f"# {SOURCE_MARK} [library_ops ops=sum]")
    evaluation = evaluate(task, candidate_from_source(proposal.source, task), device="cpu", settings=FAST_GUARD)
    assert evaluation.verdict in (Verdict.KEEP, Verdict.ACCEPT), evaluation.reason  # which: a CPU timing
    reflection = asyncio.run(agent.reflect(ctx, proposal, evaluation))
    assert reflection.startswith("[library_ops ops=sum] on slow_sum") and evaluation.verdict.value in reflection
    assert "library_gemm: no GEMM in the task" in reflection and len(reflection) <= 1200
    assert agent.search.best_family() == "library_ops"


def test_reflection_on_a_reject_gives_the_guard_reason(reject_evaluation):
    task = example(GEMM)
    agent = BuiltinAgent("a0", get_strategy("precision"), task, seed=0)
    ctx = _context(task, strategy="precision")
    proposal = _propose(agent, ctx)
    reflection = asyncio.run(agent.reflect(ctx, proposal, reject_evaluation))
    assert reflection.startswith("[precision_lowp_gemm dtype=float16]")
    assert "INCORRECT_NUMERICAL: 3 of 32 elements out of tolerance" in reflection
    assert parse_points(_propose(agent, ctx).claim) == [("precision_lowp_gemm", {"dtype": "bfloat16x3"})]


def _finding(kind: FindingKind, reflection: str) -> Finding:
    verdict = Verdict.KEEP if kind is FindingKind.WIN else Verdict.REJECT
    return Finding(kind=kind, kernel_type="gemm", task="other", strategy="library", reflection=reflection,
                   verdict=verdict, speedup=1.4 if kind is FindingKind.WIN else None,
                   reason="" if kind is FindingKind.WIN else "INCORRECT_NUMERICAL", candidate_id=1,
                   candidate_hash="h", created=datetime(2025, 1, 1, tzinfo=timezone.utc))


def test_recalled_traps_are_skipped_and_wins_tried_first():
    task = example(GEMM)
    trap = _finding(FindingKind.TRAP, "[cuda_graph warmup=3] on other: REJECT, INCORRECT_NUMERICAL")
    win = _finding(FindingKind.WIN, "[torch_compile mode=default] on other: KEEP 1.4x")
    agent = BuiltinAgent("a0", get_strategy("scheduling"), task, seed=0)
    ctx = _context(task, strategy="scheduling", findings=(trap, win))
    assert parse_points(_propose(agent, ctx).claim) == [("torch_compile", {"mode": "default"})]
    assert parse_points(_propose(agent, ctx).claim) == [("cuda_graph", {"warmup": 1})]


def test_restarted_agent_starts_from_the_leaders_point_and_names_it_as_parent():
    task = example(GEMM)
    leader = LeaderboardEntry(agent_id="a9", strategy="scheduling", candidate_id=17, speedup=1.3, latency_ms=0.1,
                              source=f"# {SOURCE_MARK} [torch_compile mode=default]\nimport torch\n")
    agent = BuiltinAgent("a0", get_strategy("scheduling"), task, seed=0)
    proposal = _propose(agent, _context(task, strategy="scheduling", leaderboard=(leader,)))
    assert parse_points(proposal.claim) == [("torch_compile", {"mode": "default"})]
    assert proposal.parent_id == 17


def test_draft_switches_family_and_borrows_when_the_strategy_has_no_other():
    task = example(SLOW_SUM)
    agent = BuiltinAgent("a0", get_strategy("library"), task, seed=0)
    incumbent = _propose(agent, _context(task))
    draft = _propose(agent, _context(task, incumbent_id=1, incumbent_source=incumbent.source, must_draft=True))
    family = parse_points(draft.claim)[0][0]
    assert draft.is_draft and family != "library_ops"
    assert family not in {"library_gemm", "library_sdpa", "library_channels_last"}  # borrowed: none of those apply


def test_the_builtin_backend_names_the_strategies_it_has_moves_for():
    """A plain bf16 GEMM has nothing to fuse: fusion is missing, the Hopper kernels of arch are there."""
    task = load_task(REPO / "bench" / "suites" / "h200" / "gemm_bf16_4096.py")
    work = BuiltinAgent.strategies_with_work(task)
    assert {"library", "tensor_cores", "scheduling", "arch"} <= work and "fusion" not in work


def test_on_the_cpu_gpu_only_families_are_not_proposed():
    """A campaign on the CPU spent its budget on CUDA-graph candidates (issue 19): they replay nothing there."""
    task = example(GEMM)
    on_cpu = builtin_factory(device="cpu")("a0", get_strategy("scheduling"), task, 0)
    families = set()
    while (proposal := _propose(on_cpu, _context(task, strategy="scheduling"))) is not None:
        families.add(parse_points(proposal.claim)[0][0])
        if len(families) > 1:
            break
    assert "cuda_graph" not in families
    assert "GPU-only" in on_cpu.search.skipped["cuda_graph"]
    on_gpu = builtin_factory(device="cuda:0")("a0", get_strategy("scheduling"), task, 0)
    _propose(on_gpu, _context(task, strategy="scheduling"))
    assert "cuda_graph" not in on_gpu.search.skipped


def test_the_campaign_tells_the_builtin_backend_its_device():
    from kernelarc.agents.usage import Budget
    from kernelarc.campaign import CampaignOptions
    from kernelarc.campaign.run import BackendRun, agent_factory

    factory = agent_factory(CampaignOptions(backend="builtin"), BackendRun(None, None, "cpu", Budget()))
    assert factory("a0", get_strategy("scheduling"), example(GEMM), 0).device == "cpu"
