"""Device ceilings (measured once, cached) and the speed-of-light bound of a task."""

from kernelarc.roofline.ceilings import DeviceCeilings, ceilings_for, measure
from kernelarc.roofline.sol import sol_ms, sol_score

__all__ = ["DeviceCeilings", "ceilings_for", "measure", "sol_ms", "sol_score"]
