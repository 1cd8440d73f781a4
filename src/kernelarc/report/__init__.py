"""Reports: summary.json, tables, plots and the HTML report. Imports without torch."""

from kernelarc.report.html import REPORT_NAME, NotARunDirError, write_report
from kernelarc.report.plot import plot_progress

__all__ = ["NotARunDirError", "REPORT_NAME", "plot_progress", "write_report"]
