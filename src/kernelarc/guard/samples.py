"""Timed latencies of one side and their statistics (median, spread). Imports without torch."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Samples:
    """Latencies (ms) of one side on one workload, one per timed call."""

    times_ms: tuple[float, ...]

    def quantile(self, q: float) -> float:
        s = sorted(self.times_ms)
        pos = q * (len(s) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    @property
    def median(self) -> float:
        return self.quantile(0.5)

    @property
    def spread(self) -> float:
        """(p80 - p20) / p50: the noise a speedup must beat."""
        m = self.median
        return (self.quantile(0.8) - self.quantile(0.2)) / m if m > 0 else 0.0


def median(values: list[float]) -> float:
    return Samples(tuple(values)).median if values else 0.0


__all__ = ["Samples", "median"]
