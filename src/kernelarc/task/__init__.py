"""kernelarc.task"""
