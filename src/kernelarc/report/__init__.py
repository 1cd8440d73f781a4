"""Reports: summary.json, tables and plots. Imports without torch."""

from kernelarc.report.plot import plot_progress

__all__ = ["plot_progress"]
