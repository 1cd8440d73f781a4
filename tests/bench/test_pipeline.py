"""A campaign dir left by an earlier session is reused when finished with the same options, refused otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelarc.bench.options import BenchOptions
from kernelarc.bench.pipeline import campaign_summary
from kernelarc.campaign.run import DB_NAME
from kernelarc.errors import UserError
from kernelarc.memory import Store
from kernelarc.memory.records import CampaignMeta, CampaignStatus

TASK = Path(__file__).resolve().parents[2] / "bench" / "suites" / "cpu_smoke" / "relu_tiny.py"


def _stored_campaign(run_dir: Path, options: dict, status: CampaignStatus) -> None:
    meta = CampaignMeta(task_name="relu_tiny", task_path=str(TASK), kernel_type="elementwise", seed=0,
                        options=options, status=status)
    Store(run_dir / DB_NAME).put_meta(meta)


def test_finished_campaign_with_the_same_options_is_reused(tmp_path):
    options = BenchOptions(device="cpu", backend="scripted").campaign_options()
    _stored_campaign(tmp_path, options.model_dump(mode="json"), CampaignStatus.FINISHED)
    (tmp_path / "summary.json").write_text(json.dumps({"best": None, "stop_reason": "budget"}))
    assert campaign_summary(TASK, options, tmp_path) == {"best": None, "stop_reason": "budget"}


def test_campaign_with_other_options_is_refused(tmp_path):
    stored = BenchOptions(device="cpu", budget=5).campaign_options().model_dump(mode="json")
    _stored_campaign(tmp_path, stored, CampaignStatus.FINISHED)
    with pytest.raises(UserError, match="holds a campaign with other options"):
        campaign_summary(TASK, BenchOptions(device="cpu", budget=6).campaign_options(), tmp_path)
