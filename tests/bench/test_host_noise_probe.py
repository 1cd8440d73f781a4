"""bench/gpu/host_noise_probe.py `--set`: guard settings to compare on one warm machine, checked as the guard's own."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .scripts import ROOT, load_script

SCRIPT = "bench/gpu/host_noise_probe.py"


def test_set_changes_the_named_settings_and_keeps_the_probes_stage_limits():
    settings = load_script(SCRIPT).guard_settings(["rest_ratio=2", "cooldown_s = 0.25"])
    assert (settings.rest_ratio, settings.cooldown_s) == (2.0, 0.25)
    assert (settings.compile_timeout_s, settings.run_timeout_s, settings.block_load_s) == (200.0, 200.0, 0.005)


@pytest.mark.parametrize(("pair", "said"), [("rest_ratio", "expects KEY=VALUE"), ("rest_ration=2", "rest_ration"),
                                            ("rest_ratio=-1", "rest_ratio"), ("rest_ratio=fast", "rest_ratio")])
def test_a_setting_the_guard_does_not_take_is_named(pair, said):
    with pytest.raises(ValueError, match=said):
        load_script(SCRIPT).guard_settings([pair])


def test_the_probe_refuses_a_bad_setting_in_one_line_with_exit_2(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / SCRIPT), str(tmp_path / "out.json"), "--set", "rest_ration=2",
                           "task.py=eager"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [done.stderr.strip()], done.stderr
    assert "rest_ration" in done.stderr and not (tmp_path / "out.json").exists()
