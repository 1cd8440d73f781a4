"""Errors a user can cause. The CLI prints them as one line and exits with code 2.

A candidate's failure is never one of these: it is a verdict. Our own bugs raise ordinary exceptions.
"""


class UserError(Exception):
    """A mistake the user can fix: a bad task or candidate file, an unknown option, no GPU."""


class TaskError(UserError):
    """The task (KernelBench file or SOL-ExecBench problem dir) is missing or malformed."""


class CandidateError(UserError):
    """The candidate file given on the command line is missing or malformed."""


class DeviceError(UserError):
    """The requested device is unknown or not present."""


__all__ = ["UserError", "TaskError", "CandidateError", "DeviceError"]
