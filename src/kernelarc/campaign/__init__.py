"""kernelarc.campaign"""
