"""kernelarc: make GPU kernels fast with strategy-specialized agents judged by one deterministic guard."""

__version__ = "0.1.0"

__all__ = ["__version__"]
