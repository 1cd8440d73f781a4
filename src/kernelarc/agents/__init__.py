"""kernelarc.agents"""
