"""progress.png: a log axis where speedups span an order of magnitude, the winner marked with the headline's figure."""

from __future__ import annotations

from kernelarc.report.plot import WinnerMark, log_axis, plot_progress


def test_the_axis_is_logarithmic_only_past_an_order_of_magnitude():
    assert log_axis({"a0": [(1, 1.0), (2, 70.0)]})  # issue 19: a 70x chain on a linear axis
    assert log_axis({"a0": [(1, 0.05)], "baselines": [(2, 1.0)]})  # slow candidates count too
    assert not log_axis({"a0": [(1, 1.0), (2, 9.0)], "baselines": [(3, 1.2)]})


def test_the_plot_is_written_with_the_winner_marked(tmp_path):
    winner = WinnerMark(order=2, chained=70.0, label="winner: #3 a0-fusion, 54.4x vs eager head to head")
    path = plot_progress({"a0-fusion": [(1, 1.0), (2, 70.0)], "baselines": [(3, 1.1)]}, tmp_path / "p.png", "t",
                         winner=winner)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
