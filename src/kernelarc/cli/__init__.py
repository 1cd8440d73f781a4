"""kernelarc.cli"""
