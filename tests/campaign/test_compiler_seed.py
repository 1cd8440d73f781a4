"""torch.compile's code for code-writing agents: rendered in the background on a card, never on the CPU."""

from __future__ import annotations

import time

from kernelarc.campaign.compiler_seed import CompilerSeed, compiler_seed
from kernelarc.task.loader import load_task

from campaign.runs import SLOW_SUM


def test_only_code_writing_agents_on_a_card_get_it():
    task = load_task(SLOW_SUM)
    assert compiler_seed(task, "cpu", "openai") is None  # Inductor writes C++ off the GPU
    assert compiler_seed(task, "cuda:0", "builtin") is None  # the built-in agents render it themselves
    assert compiler_seed(task, "cuda:0", "scripted") is None


def test_a_seed_that_cannot_be_rendered_leaves_the_prompt_without_it(tmp_path):
    task = load_task(SLOW_SUM)
    seed = CompilerSeed(task, "no-such-device:0")  # the child cannot generate for it: an error, not a crash
    deadline = time.monotonic() + 120
    while seed.error is None and seed.source is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert seed.source is None and seed.error
