"""kernelarc.roofline"""
