"""Ablation arms differ from each other only in agents and memory; row keys follow the options."""

from __future__ import annotations

from kernelarc.bench.options import Arm, BenchOptions, options_key


def test_arms_at_equal_budget_differ_in_agents_and_memory_only():
    options = BenchOptions(agents=4, budget=30, seed=7, backend="scripted", longterm=True)
    arms = {arm: options.arm_options(arm, 2) for arm in Arm}
    assert {(a.agents, a.memory) for a in arms.values()} == {(1, "unbounded"), (4, "16"), (4, "unbounded")}
    assert arms[Arm.SOLO_PRIVATE].agents == 1 and arms[Arm.SHARED_BOUNDED].memory == "16"
    for opts in arms.values():
        assert (opts.budget, opts.seed, opts.backend, opts.longterm) == (30, 9, "scripted", False)


def test_options_key_changes_with_what_decides_a_row():
    options = BenchOptions(budget=10)
    key = options_key(options.campaign_options(), True)
    assert key == options_key(BenchOptions(budget=10).campaign_options(), True)
    assert key != options_key(BenchOptions(budget=11).campaign_options(), True)
    assert key != options_key(options.campaign_options(), False)
