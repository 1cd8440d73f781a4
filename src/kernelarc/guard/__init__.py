"""kernelarc.guard"""
