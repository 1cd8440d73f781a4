"""The generality measure's own arithmetic (bench/generality.py, bench/gpu/generality_gpu.py): how
problems are shrunk to CPU sizes, how the GPU sample is drawn and scored."""

from __future__ import annotations

import json
from pathlib import Path

from .scripts import load_script


def test_shrink_scales_every_large_constant_chained_assignments_included():
    generality = load_script("bench/generality.py")
    out = generality.shrink("batch = 128\nheight = width = 256\nk = 3\nn = 2048 * 2\nname = 'x'\n"
                            "sizes = [32768, 8, 2 * 512]\nkernel = (3, 64)\n")
    values = {}
    exec(out, values)
    assert (values["batch"], values["height"], values["width"], values["k"], values["n"]) == (16, 16, 16, 3, 16)
    assert values["sizes"] == [16, 8, 16] and values["kernel"] == (3, 16)


def test_the_gpu_sample_is_seeded_and_split_without_overlap(tmp_path: Path):
    gpu = load_script("bench/gpu/generality_gpu.py")
    for level in ("level1", "level2"):
        (tmp_path / level).mkdir()
        for i in range(6):
            (tmp_path / level / f"{i}_p.py").write_text("")
    drawn = gpu.sample(tmp_path, 5, seed=16)
    assert drawn == gpu.sample(tmp_path, 5, seed=16) and len(set(drawn)) == 5
    assert drawn != gpu.sample(tmp_path, 5, seed=17)


def test_only_runs_the_named_problems_of_the_sample_in_the_order_given(tmp_path: Path, monkeypatch):
    import pytest

    gpu = load_script("bench/gpu/generality_gpu.py")
    (tmp_path / "level1").mkdir()
    for i in range(6):
        (tmp_path / "level1" / f"{i}_p.py").write_text("")
    drawn = [gpu.run_dir_name(p) for p in gpu.sample(tmp_path, 4, seed=16)]
    ran = []
    monkeypatch.setattr(gpu.subprocess, "run", lambda cmd, **kw: ran.append(Path(cmd[4]).stem) or
                        type("Done", (), {"stdout": "", "stderr": "", "returncode": 0})())
    gpu.run(tmp_path, tmp_path / "out", 4, 16, 10.0, "1/1", 1, only=(drawn[2], drawn[0]))
    assert ran == [drawn[2].removeprefix("level1_"), drawn[0].removeprefix("level1_")]
    with pytest.raises(SystemExit, match="not in the sample"):
        gpu.run(tmp_path, tmp_path / "out", 4, 16, 10.0, "1/1", 1, only=("level9_none",))


def _summary(agent: str, vs_eager: float | None, vs_compile: float | None, finals: str = "measured") -> dict:
    return {"task": {"name": "t", "kernel_type": "gemm"}, "candidates": 4, "stop_reason": "budget", "wall_s": 1.0,
            "guard": {}, "best": {"agent": agent, "speedup_vs_eager": vs_eager, "speedup_vs_compile": vs_compile,
                                  "final_timing": finals}}


def test_fast_1_needs_an_agents_kernel_faster_than_both_baselines(tmp_path: Path):
    gpu = load_script("bench/gpu/generality_gpu.py")
    assert gpu.row(_summary("a0-fusion", 1.5, 1.2))["fast_1"] is True
    assert gpu.row(_summary("a0-fusion", 1.5, 0.9))["over_best"] == 0.9
    baseline = gpu.row(_summary("baseline:torch.compile", 1.4, None))  # never timed against itself
    assert baseline["fast_1"] is False and baseline["over_best"] == 1.0
    assert gpu.row(_summary("a0-fusion", 1.5, None))["over_best"] == 1.5  # torch.compile failed: eager is the best
    cut = gpu.row(_summary("a0-fusion", None, None, finals="cut: the time limit (110 s) passed"))
    assert cut["over_best"] is None and cut["fast_1"] is False  # no final timing: left out of the geomean
    for i, s in enumerate([_summary("a0-fusion", 2.0, 2.0), _summary("baseline:eager", None, 1.0)]):
        (tmp_path / f"p{i}").mkdir()
        (tmp_path / f"p{i}" / "summary.json").write_text(json.dumps(s))
    _, data = gpu.table(tmp_path)
    assert data["summary"]["fast_1.0"] == 0.5 and abs(data["summary"]["geomean_over_best"] - 2 ** 0.5) < 1e-9
