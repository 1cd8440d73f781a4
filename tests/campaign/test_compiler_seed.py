"""torch.compile's code for code-writing agents: rendered in the background on a card, never on the CPU."""

from __future__ import annotations

import time

from kernelarc.campaign.compiler_seed import CompilerSeed, compiler_seed, seeded
from kernelarc.task.loader import load_task

from campaign.runs import SLOW_SUM


def test_it_is_rendered_on_a_card_for_the_agents_that_use_it():
    assert seeded("cuda:0", "openai") and seeded("cuda:1", "cli")  # read in the prompts
    assert seeded("cuda:0", "builtin")  # the inductor_seed family then finds it in the process's cache
    assert not seeded("cuda:0", "scripted") and not seeded("cuda:0", "replay")
    assert compiler_seed(load_task(SLOW_SUM), "cpu", "openai") is None  # Inductor writes C++ off the GPU


def test_a_seed_that_cannot_be_rendered_leaves_the_prompt_without_it(tmp_path):
    task = load_task(SLOW_SUM)
    seed = CompilerSeed(task, "no-such-device:0")  # the child cannot generate for it: an error, not a crash
    deadline = time.monotonic() + 120
    while seed.error is None and seed.source is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert seed.source is None and seed.error
