"""The build cache: what it keeps and restores (directories on disk), and a real C++ candidate that
compiles once across two evaluations."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import get_family
from kernelarc.campaign.baselines import EAGER, baseline_candidates
from kernelarc.guard import candidate_from_source
from kernelarc.guard.build_cache import BuildCache
from kernelarc.guard.judge import Judge
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.sides import gpu_capability
from kernelarc.task.loader import load_task

from tests.agents.builtin.builtin_tasks import task_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TASK = load_task(FIXTURES / "tasks" / "relu_tiny.py")


def _candidate(*names: str):
    mentions = "".join(f"\n# builds {n}" for n in names)
    source = f"import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x){mentions}\n"
    return candidate_from_source(source, TASK)


def _build(extensions: Path, name: str, library: bool = True) -> None:
    (extensions / name).mkdir(parents=True)
    (extensions / name / "main.cpp").write_text(name)
    if library:
        (extensions / name / f"{name}.so").write_text("lib")


def test_keeps_only_finished_builds_its_candidate_names(tmp_path):
    cache, worker = BuildCache(tmp_path / "cache"), tmp_path / "worker"
    cand = _candidate("ext_a", "ext_failed")
    for name in ("ext_a", "ext_other"):
        _build(worker, name)
    _build(worker, "ext_failed", library=False)
    assert cache.keep(worker, cand, restored=set()) == ["ext_a"]
    assert sorted(p.name for p in (tmp_path / "cache" / "kept" / cand.hash).iterdir()) == ["ext_a"]


def test_restores_a_candidates_own_builds_only(tmp_path):
    cache = BuildCache(tmp_path / "cache")
    incumbent, candidate = _candidate("ext_inc"), _candidate("ext_cand")
    first = tmp_path / "first"
    _build(first, "ext_inc")
    cache.keep(first, incumbent, restored=set())
    fresh, other = tmp_path / "fresh", tmp_path / "other"
    fresh.mkdir()
    other.mkdir()
    assert cache.restore(fresh, incumbent) == {"ext_inc"} and (fresh / "ext_inc" / "ext_inc.so").is_file()
    assert cache.restore(other, candidate) == set() and not any(other.iterdir())  # another's builds never
    # a build restored into a side is never kept again under the judged candidate
    assert cache.keep(fresh, incumbent, restored={"ext_inc"}) == []


def test_a_graph_point_keeps_the_build_it_makes_on_the_gpu(tmp_path):
    """The cpp_forward graph point builds `<module>_graph` on a GPU and `<module>` elsewhere; both
    names must be in its source, or the cache drops the GPU build and every later evaluation against
    it rebuilds it (run 6 on the H200: 25 s per evaluation)."""
    analysis = analyze(task_file(tmp_path, "relu_tiny", (Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
                                                         / "relu_tiny.py").read_text()))
    graph = candidate_from_source(get_family("cpp_forward").render(analysis, {"ops": "as_captured", "graph": True}).source,
                                  analysis.task)
    module = re.search(r"kernelarc_cpp_forward_[0-9a-f]{12}", graph.source).group(0)
    cache, worker = BuildCache(tmp_path / "cache"), tmp_path / "worker"
    for name in (module, f"{module}_graph"):
        _build(worker, name)
    assert sorted(cache.keep(worker, graph, restored=set())) == [module, f"{module}_graph"]


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("c++") and shutil.which("ninja")), reason="needs a C++ compiler and ninja")
@pytest.mark.heavy
def _secret(tmp_path: Path) -> Path:
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    (folder / "secret.txt").write_text("SECRET")
    return folder


def test_a_compiled_folder_replaced_by_a_link_is_never_followed(tmp_path):
    """Fifth red-team pass: a side replaced its `compiled` folder by a link to a root-only folder; the judge
    (root) copied the folder behind it into the cache, and the candidate's next side got it back as its own."""
    cache, secret = BuildCache(tmp_path / "cache"), _secret(tmp_path)
    side = tmp_path / "side"
    side.mkdir()
    (side / "compiled").symlink_to(secret)
    assert cache.keep_compiled(side / "compiled", _candidate()) is False
    assert not list((tmp_path / "cache").rglob("secret.txt"))


def test_an_extensions_folder_replaced_by_a_link_is_never_followed(tmp_path):
    """Sixth red-team pass: a side renamed its `extensions` folder and put a link to a root-only folder in its
    place; the judge kept the builds behind the link, and the candidate's next side read them."""
    cache, secret = BuildCache(tmp_path / "cache"), _secret(tmp_path)
    _build(secret, "private_build")
    side = tmp_path / "side"
    side.mkdir()
    (side / "extensions").symlink_to(secret)
    assert cache.keep(side / "extensions", _candidate("private_build"), set()) == []
    assert not (tmp_path / "cache" / "kept").exists() or not list((tmp_path / "cache" / "kept").rglob("*"))


def test_links_fifos_and_swapped_names_inside_a_kept_folder_are_left_out(tmp_path):
    import os

    cache, secret = BuildCache(tmp_path / "cache"), _secret(tmp_path)
    compiled = tmp_path / "side" / "compiled"
    (compiled / "triton" / "abc").mkdir(parents=True)
    (compiled / "triton" / "abc" / "kernel.cubin").write_bytes(b"cubin")
    (compiled / "triton" / "leak").symlink_to(secret)
    (compiled / "triton" / "leak.txt").symlink_to(secret / "secret.txt")
    os.mkfifo(compiled / "triton" / "pipe")  # a read of it would block the judge
    extensions = tmp_path / "side" / "extensions"
    _build(extensions, "ext")
    (extensions / "ext" / "notes").symlink_to(secret)
    (extensions / "linked").symlink_to(secret)
    candidate = _candidate("ext", "linked")
    assert cache.keep_compiled(compiled, candidate)
    assert cache.keep(extensions, candidate, set()) == ["ext"]
    kept = tmp_path / "cache" / "kept" / candidate.hash
    files = sorted(str(p.relative_to(kept)) for p in kept.rglob("*") if p.is_file() or p.is_symlink())
    assert files == ["compiled/triton/abc/kernel.cubin", "ext/ext.so", "ext/main.cpp"]


def test_sparse_files_count_at_their_apparent_size(tmp_path, monkeypatch):
    """A side's two 1 GiB sparse files (no block written) became 2 GiB of the judge's disk."""
    import kernelarc.guard.build_cache as build_cache

    monkeypatch.setattr(build_cache, "BUILD_CAP_BYTES", 1 << 20)
    cache, extensions = BuildCache(tmp_path / "cache"), tmp_path / "extensions"
    _build(extensions, "big")
    with open(extensions / "big" / "hole.bin", "wb") as f:
        f.truncate(8 << 20)
    assert cache.keep(extensions, _candidate("big"), set()) == []
    assert not (tmp_path / "cache" / "kept").exists() or not list((tmp_path / "cache" / "kept").rglob("hole.bin"))


def test_a_cpp_candidate_compiles_once_across_evaluations(tmp_path):
    """Judged as the candidate it builds (30-60 s on 2 cores); judged again as the incumbent it loads
    the kept build. Without the cache the second evaluation would build it again."""
    source = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
              "        return torch.relu(x) * 2.0\n\n\ndef get_inputs():\n    return [torch.randn(8, 32)]\n\n\n"
              "def get_init_inputs():\n    return []\n")
    analysis = analyze(task_file(tmp_path, "relu_scale", source))
    family = get_family("cpp_forward")
    cpp = candidate_from_source(family.render(analysis, {"ops": "as_captured", "graph": False}).source, analysis.task)
    plain = candidate_from_source(source.replace("class Model(", "class ModelNew("), analysis.task)
    cache, settings = BuildCache(tmp_path / "cache"), GuardSettings(rounds=1, cpu_iterations=3, warmup=1)
    with Judge(analysis.task, build_cache=cache) as judge:
        first = judge.evaluate(cpp, device="cpu", settings=settings)
        assert first.correct, first.reason
        assert len(list((tmp_path / "cache" / "kept" / cpp.hash).iterdir())) == 1
        second = judge.evaluate(plain, cpp, device="cpu", settings=settings)
    assert second.correct, second.reason
    # the incumbent is loaded before timing: a kept build is a load, not a compile (the side builds
    # under one path in every sandbox, so the copied build is up to date)
    assert second.stage_seconds["compile"] < first.stage_seconds["compile"] / 3, (first.stage_seconds,
                                                                                   second.stage_seconds)


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("c++") and shutil.which("ninja")), reason="needs a C++ compiler and ninja")
@pytest.mark.heavy
def test_a_prebuild_leaves_the_evaluation_a_load(tmp_path):
    """Built ahead in a GPU-less side (outside any device lock), the evaluation's compile stage only loads."""
    source = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
              "        return torch.relu(x) * 3.0\n\n\ndef get_inputs():\n    return [torch.randn(8, 32)]\n\n\n"
              "def get_init_inputs():\n    return []\n")
    analysis = analyze(task_file(tmp_path, "relu_triple", source))
    cpp = candidate_from_source(get_family("cpp_forward").render(analysis, {"ops": "as_captured", "graph": False}).source,
                                analysis.task)
    settings = GuardSettings(rounds=1, cpu_iterations=3, warmup=1)
    with Judge(analysis.task, build_cache=BuildCache(tmp_path / "cache")) as judge:
        started = time.monotonic()
        assert judge.prebuild(cpp, settings)
        built_s = time.monotonic() - started
        ev = judge.evaluate(cpp, device="cpu", settings=settings)
        assert not judge.prebuild(cpp, settings)  # judged here, its build kept: nothing is left to build ahead
    assert ev.correct, ev.reason
    assert ev.stage_seconds["compile"] < built_s / 3, (built_s, ev.stage_seconds)
    assert ev.builds_restored and all(name in cpp.source for name in ev.builds_restored)  # and it says so
    plain = candidate_from_source(source.replace("class Model(", "class ModelNew("), analysis.task)
    assert not Judge(analysis.task, build_cache=BuildCache(tmp_path / "other")).prebuild(plain)  # nothing to build


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("c++") and shutil.which("ninja")), reason="needs a C++ compiler and ninja")
@pytest.mark.heavy
def test_a_prebuild_for_a_gpu_builds_what_the_gpu_side_will_load(tmp_path):
    """Candidates build their CUDA extension only where torch sees a GPU (the built-in CUDA families among
    them): the GPU-less side building ahead for an sm_90 card says it is one, else it builds the CPU
    fallback under another name and the evaluation builds again on the GPU's time."""
    source = ("import torch\nfrom torch.utils.cpp_extension import load_inline\n\n"
              "_ON_GPU = torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)\n"
              "_triple = load_inline(name=\"prebuilt_for_gpu\" if _ON_GPU else \"prebuilt_for_cpu\", "
              "cpp_sources=\"torch::Tensor triple(torch::Tensor x) { return x * 3; }\", functions=[\"triple\"]).triple\n\n\n"
              "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return _triple(torch.relu(x))\n")
    cpp = candidate_from_source(source, TASK)
    cache = BuildCache(tmp_path / "cache")
    assert Judge(TASK, build_cache=cache).prebuild(cpp, GuardSettings(rounds=1), build_for="9.0")
    assert [b.name for b in (tmp_path / "cache" / "kept" / cpp.hash).iterdir()] == ["prebuilt_for_gpu"]


@pytest.mark.slow
def test_a_prebuild_compiles_a_triton_candidate_for_the_gpu_that_will_run_it(tmp_path):
    """A Triton candidate's first call (JIT compilation, ptxas) off the device lock: in a GPU-less side its
    forward on CPU inputs compiles each launch for sm_90 and launches nothing (guard/triton_ahead.py); the
    cubin is kept for its GPU sides. The outputs' shapes come from the reference side: none before the
    judge's first evaluation."""
    honest = candidate_from_source((FIXTURES / "candidates" / "honest_triton.py").read_text(), TASK)
    settings = GuardSettings(rounds=1, cpu_iterations=3, warmup=1)
    kept = tmp_path / "cache" / "kept" / honest.hash / "compiled" / "triton"
    with Judge(TASK, build_cache=BuildCache(tmp_path / "cache")) as judge:
        assert not judge.prebuild(honest, settings, build_for="9.0")
        assert judge.evaluate(_candidate(), device="cpu", settings=settings).correct
        assert judge.prebuild(honest, settings, build_for="9.0")
        assert not judge.prebuild(_candidate(), settings, build_for="9.0")  # plain torch: nothing to compile ahead
        spare = judge._ahead_spare  # the next prebuild's side, started while this one worked
        assert spare is not None and spare.proc.poll() is None
        ev = judge.evaluate(honest, device="cpu", settings=settings)  # its side got what was compiled ahead
    assert ev.correct, ev.reason
    assert ev.compiled_restored == sum(1 for f in kept.parent.rglob("*") if f.is_file()) > 0
    assert spare.proc.wait(timeout=10) is not None  # ended with the judge
    compiled = [json.loads(f.read_text()) for f in kept.glob("*/_relu_kernel.json")]
    assert compiled and {c["target"]["arch"] for c in compiled} == {90}
    assert [f.stat().st_size > 0 for f in kept.glob("*/_relu_kernel.cubin")] == [True] * len(compiled)


AUTOTUNED = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 256}, num_warps=8)], key=["n"])
@triton.jit
def _relu_tuned(y_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), 0.0), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _relu_tuned[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](y, x, x.numel())
        return y
"""


def _compiled_ahead(tmp_path: Path, task, *candidates) -> list[Path]:
    """Each candidate prebuilt for sm_90 in one judge that first learned the outputs' shapes from eager."""
    settings = GuardSettings(rounds=1, cpu_iterations=3, warmup=1)
    with Judge(task, build_cache=BuildCache(tmp_path / "cache"), warm=False) as judge:
        assert judge.evaluate(baseline_candidates(task)[EAGER], device="cpu", settings=settings, trusted=True).correct
        assert all(judge.prebuild(c, settings, build_for="9.0") for c in candidates)
    return [tmp_path / "cache" / "kept" / c.hash / "compiled" / "triton" for c in candidates]


@pytest.mark.slow
def test_compiling_ahead_covers_autotuners_and_gives_up_quietly(tmp_path):
    """An autotuner compiles every configuration it would time; code that will not run on CPU inputs (it asks
    for CUDA tensors) leaves nothing kept and no error: its GPU side compiles as before."""
    cuda_only = candidate_from_source(AUTOTUNED.replace("        y = torch.empty_like(x)\n",
                                                        "        assert x.is_cuda\n        y = torch.empty_like(x)\n"), TASK)
    tuned, failing = _compiled_ahead(tmp_path, TASK, candidate_from_source(AUTOTUNED, TASK), cuda_only)
    compiled = [json.loads(f.read_text()) for f in tuned.glob("*/_relu_tuned.json")]
    assert sorted((c["target"]["arch"], c["num_warps"]) for c in compiled) == [(90, 4), (90, 8)]  # both configs
    assert not failing.exists()


@pytest.mark.slow
def test_a_built_in_row_family_compiles_ahead_in_bf16(tmp_path):
    task = load_task(FIXTURES / "tasks" / "builtin_rmsnorm_cast_bf16.py")
    analysis = analyze(task)
    family = get_family("triton_rowwise")
    row = candidate_from_source(family.render(analysis, family.space(analysis)[0]).source, task)
    (kept,) = _compiled_ahead(tmp_path, task, row)
    assert [json.loads(f.read_text())["target"]["arch"] for f in kept.glob("*/*.json") if not f.name.startswith("__")] == [90]


@pytest.mark.gpu
def test_a_triton_candidate_compiled_ahead_compiles_nothing_under_the_lock(tmp_path):
    """On the card: the kernels compiled in the GPU-less side are the ones its GPU side launches (the same
    Triton cache keys), so the evaluation adds nothing to what was kept (the kept copy grows only when a side
    compiled more, BuildCache.keep_compiled) but Triton's host modules, built ahead only where the GPU-less
    side finds the driver's library. Its first call's seconds are printed for docs/benchmarks.md."""
    honest = candidate_from_source((FIXTURES / "candidates" / "honest_triton.py").read_text(), TASK)
    settings = GuardSettings(rounds=1)
    kept = tmp_path / "cache" / "kept" / honest.hash / "compiled" / "triton"
    with Judge(TASK, build_cache=BuildCache(tmp_path / "cache")) as judge:
        assert judge.evaluate(_candidate(), device="cuda", settings=settings).correct
        assert judge.prebuild(honest, settings, build_for=gpu_capability("cuda"))
        ahead = sorted(p.relative_to(kept) for p in kept.rglob("*.cubin"))
        ev = judge.evaluate(honest, device="cuda", settings=settings)
    assert ev.correct, ev.reason
    assert ev.compiled_restored > 0
    assert ahead and sorted(p.relative_to(kept) for p in kept.rglob("*.cubin")) == ahead
    print(f"first call {ev.stage_seconds['first_call']:.3f} s, compile {ev.stage_seconds['compile']:.3f} s")


def _compiled(folder: Path, *files: str) -> None:
    for name in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(name)


def test_compiler_caches_go_back_only_to_the_code_that_made_them(tmp_path):
    cache = BuildCache(tmp_path / "cache")
    incumbent = _candidate()
    candidate = candidate_from_source(incumbent.source.replace("torch.relu(x)", "torch.relu(x) * 1.0"), TASK)
    side = tmp_path / "side"
    _compiled(side, "inductor/fxgraph/ab/entry", "triton/XYZ/kernel.cubin")
    assert cache.keep_compiled(side, incumbent)
    fresh, other = tmp_path / "fresh", tmp_path / "other"
    fresh.mkdir()
    other.mkdir()
    assert cache.restore_compiled(fresh, incumbent) == 2 and (fresh / "triton" / "XYZ" / "kernel.cubin").is_file()
    assert cache.restore_compiled(other, candidate) == 0 and not any(other.iterdir())  # another's caches never
    # kept again only when the side compiled more than it was given (a later workload's kernels)
    assert not cache.keep_compiled(fresh, incumbent)
    _compiled(fresh, "triton/UVW/kernel.cubin")
    assert cache.keep_compiled(fresh, incumbent)
    assert cache.restore_compiled(tmp_path / "third", incumbent) == 3
    assert not cache.keep_compiled(tmp_path / "empty", candidate)  # nothing compiled, nothing kept


def test_compiler_caches_over_the_cap_are_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr("kernelarc.guard.build_cache.COMPILED_CAP_BYTES", 10)
    side = tmp_path / "side"
    _compiled(side, "inductor/a_file_longer_than_ten_bytes")
    cache = BuildCache(tmp_path / "cache")
    assert not cache.keep_compiled(side, _candidate()) and cache.restore_compiled(tmp_path / "fresh", _candidate()) == 0


COMPILED_CANDIDATE = '''import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = torch.compile(torch.relu)

    def forward(self, x):
        y = self.relu(x)
        print("graph cache hits", counters["inductor"]["fxgraph_cache_hit"], flush=True)
        return y
'''


@pytest.mark.slow
@pytest.mark.heavy
def test_a_compiled_candidate_finds_its_graph_in_the_next_evaluation(tmp_path):
    """Judged twice in one campaign, torch.compile code compiles once: the second evaluation's side gets
    the Triton and Inductor caches the first one filled, and Inductor's graph cache hits (its own counter,
    printed by the candidate into the side's log)."""
    compiled = candidate_from_source(COMPILED_CANDIDATE, TASK)
    settings = GuardSettings(rounds=1, cpu_iterations=3, warmup=1)
    with Judge(TASK, build_cache=BuildCache(tmp_path / "cache")) as judge:
        first = judge.evaluate(compiled, device="cpu", settings=settings)
        assert first.correct, first.reason + first.log_tail
        assert "graph cache hits 0" in first.log_tail
        second = judge.evaluate(compiled, device="cpu", settings=settings)
    assert second.correct, second.reason
    assert "graph cache hits 1" in second.log_tail and "graph cache hits 0" not in second.log_tail
