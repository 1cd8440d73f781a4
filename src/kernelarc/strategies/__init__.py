"""kernelarc.strategies"""
