"""kernelarc.memory"""
