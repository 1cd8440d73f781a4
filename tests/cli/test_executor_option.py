"""`--executor` and `--ray-address` mistakes end in one line and exit 2 before anything is written;
no Ray cluster is started here (tests/campaign/test_ray_executor.py runs one)."""

from __future__ import annotations

import sys

import pytest

from kernelarc.cli.main import run_app

from campaign.runs import REPO

RELU = REPO / "examples" / "kernelbench" / "relu_small.py"


@pytest.mark.parametrize("command", [["optimize", str(RELU)], ["bench", str(RELU.parent)]])
def test_executor_ray_without_ray_installed(command, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as without the ray extra
    code = run_app([*command, "--executor", "ray", "--device", "cpu", "--out", str(tmp_path / "out")])
    assert code == 2
    assert capsys.readouterr().err.strip() == "kernelarc: error: --executor ray needs Ray: pip install 'kernelarc[ray]'"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args, message", [
    (["--ray-address", "10.0.0.5:6379"], "--ray-address applies to --executor ray only"),
    (["--executor", "ray", "--device", "cuda:1"], "--device 'cuda:1' with --executor ray: use auto, cuda or cpu"),
])
def test_executor_options_refused(args, message, tmp_path, capsys):
    code = run_app(["optimize", str(RELU), *args, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()
