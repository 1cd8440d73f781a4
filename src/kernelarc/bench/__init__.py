"""kernelarc bench: a suite of tasks against eager, torch.compile and the speed of light, and the
memory ablation; rows kept in DIR/results.json so a suite completes over several sessions.

Depends on campaign, guard, task and roofline; nothing depends on it but the CLI.
"""

from kernelarc.bench.options import Arm, BenchOptions, options_key
from kernelarc.bench.results import (AblationRun, ArmSummary, BaselineResult, Geomean, Results, RowStatus, TaskRow,
                                     arm_summaries, load_results, save_results, suite_geomeans)
from kernelarc.bench.runner import run_suite
from kernelarc.bench.suite import SuiteError, SuiteTask, discover

__all__ = ["AblationRun", "Arm", "ArmSummary", "BaselineResult", "BenchOptions", "Geomean", "Results", "RowStatus",
           "SuiteError", "SuiteTask", "TaskRow", "arm_summaries", "discover", "load_results", "options_key",
           "run_suite", "save_results", "suite_geomeans"]
