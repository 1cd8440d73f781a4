"""The same seed and the same proposals give the same decisions."""

from __future__ import annotations

import pytest

from kernelarc.campaign import start

from campaign.runs import ROBUST_VERDICTS, SLOW_SUM, decisions, open_store, robust_options, verdict_sequences


@pytest.mark.heavy
def test_same_seed_and_proposals_give_the_same_decisions(tmp_path, robust):
    start(SLOW_SUM, robust_options(), tmp_path)
    again, first = open_store(tmp_path), open_store(robust.run_dir)
    assert verdict_sequences(first) == ROBUST_VERDICTS
    kinds = {agent: [judged[-1] for judged in d["judged"]] for agent, d in decisions(first).items()}
    assert kinds == {"a0-reduction": ["win", "trap"], "a1-memory": ["trap", "trap"]}  # KEEP, REVERT; two REJECTs
    assert decisions(again) == decisions(first)
