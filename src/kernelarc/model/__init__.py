"""`kernelarc model`: from a model to faster kernels in it (profile, regions as tasks, campaigns,
winners as PyTorch custom ops, the whole model judged before and after). Imports torch."""

from kernelarc.model.pipeline import SUMMARY, ModelOptions, run_model
from kernelarc.model.target import Target, TargetError, load_target

__all__ = ["ModelOptions", "SUMMARY", "Target", "TargetError", "load_target", "run_model"]
