"""kernelarc.report"""
