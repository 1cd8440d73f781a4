"""A campaign driven by an LLM backend end to end: the real openai SDK against a loopback
chat-completions server, the real guard on the CPU, the store recording every call, the cost cap
stopping the run, and `--replay` re-running it from the recording with the server gone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelarc.campaign import CampaignOptions, StopReason, start
from kernelarc.campaign.run import replay
from kernelarc.guard import Status, Verdict
from kernelarc.memory import Store
from kernelarc.memory.llm_calls import calls
from tests.agents.servers import fenced, openai_server  # noqa: F401

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kernelbench"
TASK = EXAMPLES / "slow_sum.py"
FASTER = (EXAMPLES / "slow_sum_torch.py").read_text()
BROKEN = FASTER.replace("return x.sum(dim=1, keepdim=True)", "return x.sum(dim=1, keepdim=True) + not_defined")
HACK = ("import torch\nimport torch.nn as nn\n\ntorch.zeros = torch.empty\n\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, x):\n        return x.sum(dim=1, keepdim=True)\n")
# Each reply costs 1000 input and 200 output tokens: $0.003 + $0.003 at these prices.
CALL_USD = 0.006


def _config(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "kernelarc.toml"
    path.write_text(f'[openai]\nbase_url = "{url}"\nmodel = "test-model"\nmax_retries = 1\ntimeout_s = 10\n\n'
                    f'[prices."test-model"]\ninput = 3.0\noutput = 15.0\n')
    return path


@pytest.mark.slow  # three guard evaluations and a baseline on the CPU
@pytest.mark.heavy
def test_an_openai_campaign_is_judged_costed_stopped_and_replayed(openai_server, tmp_path):
    openai_server.enqueue(
        fenced(FASTER, "one reduction call instead of a column loop"), "Vectorized: one sum over the row.",
        fenced(BROKEN, "add a bias"), "It referenced a name that does not exist.",
        fenced(HACK, "faster zeros"), "The gate refused patching torch.",
        "I think the kernel is already optimal.", "Still no code, sorry.",  # garbage twice: a failed step
    )
    options = CampaignOptions(agents=1, strategies=("reduction",), backend="openai",
                              backend_options={"config": str(_config(tmp_path, openai_server.url))},
                              budget=10, max_cost=7.5 * CALL_USD, compile_baseline=False, rounds=2, longterm=False,
                              device="cpu")
    result = start(TASK, options, tmp_path / "run")

    assert result.stop_reason is StopReason.MAX_COST
    store = Store(tmp_path / "run" / "campaign.sqlite")
    judged = [(r.evaluation.verdict, r.evaluation.status) for r in store.evaluations() if r.agent_id]
    assert judged[0] == (Verdict.KEEP, Status.PASSED)
    assert judged[1][0] is Verdict.REJECT and judged[1][1] in {Status.COMPILE_ERROR, Status.RUNTIME_ERROR}
    assert judged[2] == (Verdict.REJECT, Status.STATIC_REJECT)
    assert len(judged) == 3
    assert [e.kind for e in store.events(kind="agent_error")] == ["agent_error"]  # the garbage step
    recorded = calls(store)
    assert len(recorded) == 8 and recorded[0].prompt and recorded[0].response
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["stop_reason"] == "max_cost"
    assert summary["llm_usage"]["total"]["cost_usd"] == pytest.approx(8 * CALL_USD)
    assert summary["best"]["agent"] == "a0-reduction"

    openai_server.__exit__(None, None, None)  # no model access from here on
    again = replay(tmp_path / "run", tmp_path / "replayed")
    replayed = Store(tmp_path / "replayed" / "campaign.sqlite")
    assert [(r.evaluation.verdict, r.evaluation.status) for r in replayed.evaluations() if r.agent_id] == judged
    assert [c.response for c in calls(replayed)] == [c.response for c in recorded]
    assert again.stop_reason is StopReason.ALL_RETIRED  # the recording ended, so did the replayed agent
