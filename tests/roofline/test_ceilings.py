"""Device ceilings: a ceiling is never below what a plain kernel reaches; a cache of another method is redone."""

from __future__ import annotations

import pytest

from kernelarc.roofline import ceilings


@pytest.mark.gpu
def test_the_copy_ceiling_is_not_below_what_an_elementwise_kernel_reaches():
    """A copy ceiling under what a kernel does gives SOL scores above 1 (session 35: 2.0 on an H100). An fp32
    `mul` out of place moves as many bytes per element as the copy: the ceiling stays within noise of it or above."""
    import torch
    import triton.testing

    found = ceilings.measure()
    x = torch.randn(1 << 28, device="cuda")
    y = torch.empty_like(x)
    ms = triton.testing.do_bench(lambda: torch.mul(x, 1.0, out=y), warmup=100, rep=300)
    reached_gbps = 2 * x.nbytes / (ms * 1e-3) / 1e9
    assert found.copy_gbps >= 0.97 * reached_gbps, (found.copy_gbps, reached_gbps)


def test_a_cached_ceiling_of_another_method_is_measured_again(monkeypatch, tmp_path):
    """Ceilings cached by an older method (the median after five repeats read an H100 27% low) are not reused;
    those of the current method are. The device's name and the measurement are stand-ins: there is no GPU here."""
    import torch

    monkeypatch.setattr(ceilings, "user_cache_dir", lambda: tmp_path)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "Some GPU")
    fresh = ceilings.DeviceCeilings(device="Some GPU", copy_gbps=2900.0, bf16_tflops=700.0, measured_at="now",
                                    torch_version=torch.__version__)
    measured = []
    monkeypatch.setattr(ceilings, "measure", lambda index=0: measured.append(index) or fresh)
    old = fresh.model_copy(update={"copy_gbps": 2100.0, "method": "cuda events, median of 20 after 5 warm-ups"})
    ceilings._cache_path(f"Some GPU-torch{torch.__version__}").write_text(old.model_dump_json())
    assert ceilings.ceilings_for(0).copy_gbps == 2900.0 and measured == [0]
    assert ceilings.ceilings_for(0).copy_gbps == 2900.0 and measured == [0]  # now cached by the current method
