"""A candidate kernel as the guard receives it: source text, how to call it, and its identity.

Imports without torch. Identity is the hash of the normalized source, so the same kernel proposed
twice (even with different comments or trailing spaces) is evaluated once.
"""

from __future__ import annotations

import hashlib
import io
import json
import tokenize
from enum import Enum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kernelarc.errors import CandidateError
from kernelarc.task.model import Task, TaskFormat


class CandidateKind(str, Enum):
    """The shape of a candidate's source."""

    MODULE = "module"
    """One Python file: `ModelNew` (KernelBench) or `run` (SOL-ExecBench)."""
    SOLUTION = "solution"
    """A SOL-ExecBench `solution.json` with inline sources (Python or C++ family)."""


class Candidate(BaseModel):
    """Source text plus the facts needed to load and call it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: CandidateKind
    source: str
    """The Python source (MODULE) or the solution.json text (SOLUTION)."""
    entry: str
    """`ModelNew`, `run`, or a SOL-ExecBench `file::function` entry point."""
    destination_passing: bool = False
    """SOL-ExecBench: the function receives pre-allocated outputs after its inputs and writes them."""
    language: str = "pytorch"
    """pytorch, triton, cuda_cpp, ... (SOL-ExecBench `spec.languages`); inferred for modules."""
    name: str = "candidate"
    """For reports: the file name or the agent's label."""

    @field_validator("source")
    @classmethod
    def _validate_source(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("candidate source is empty")
        return v

    @property
    def hash(self) -> str:
        """SHA-256 of the normalized source (comments and blank lines dropped for Python)."""
        return hashlib.sha256(normalized_source(self).encode()).hexdigest()

    def python_sources(self) -> dict[str, str]:
        """Every Python file the candidate consists of, by path: what the static gate reads."""
        if self.kind is CandidateKind.MODULE:
            return {f"{self.name}.py": self.source}
        return {s["path"]: s["content"] for s in json.loads(self.source)["sources"] if s["path"].endswith(".py")}


def normalized_source(candidate: Candidate) -> str:
    """Source with comments, docstring-free blank lines and trailing spaces removed (Python only)."""
    if candidate.kind is CandidateKind.SOLUTION:
        data = json.loads(candidate.source)
        data.pop("name", None)
        data.pop("description", None)
        data.pop("author", None)
        return json.dumps(data, sort_keys=True)
    return _strip_python(candidate.source)


def _strip_python(source: str) -> str:
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.COMMENT]
        text = tokenize.untokenize(tokens)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        text = source
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def infer_language(source: str) -> str:
    """pytorch, triton or cuda_cpp, from what the source uses."""
    if "load_inline" in source or "cpp_extension" in source:
        return "cuda_cpp"
    if "triton" in source:
        return "triton"
    return "pytorch"


def needs_build(candidate: Candidate) -> bool:
    """The candidate compiles native code when loaded (a C++ solution, or `load_inline` / `cpp_extension`)."""
    if candidate.kind is CandidateKind.SOLUTION:
        return candidate.language in CPP_LANGUAGES
    return "load_inline" in candidate.source or "cpp_extension" in candidate.source


def candidate_from_source(source: str, task: Task, name: str = "candidate") -> Candidate:
    """A MODULE candidate for `task` from Python source (what agents propose)."""
    entry = "ModelNew" if task.format is TaskFormat.KERNELBENCH else "run"
    return Candidate(kind=CandidateKind.MODULE, source=source, entry=entry,
                     language=infer_language(source), name=name)


def stored_candidate(kind: str, source: str, task: Task, name: str = "candidate") -> Candidate:
    """A candidate rebuilt from what a store keeps of it: its kind (`CandidateKind` value) and source."""
    if kind == CandidateKind.SOLUTION.value:
        return solution_candidate(source, name=name)
    return candidate_from_source(source, task, name=name)


def load_candidate(path: str | Path, task: Task) -> Candidate:
    """Read a candidate file for `task`: a `.py` module or a SOL-ExecBench `solution.json`.

    Raises:
        CandidateError: the file is missing, unreadable, or not a valid candidate for this task.
    """
    p = Path(path)
    if not p.is_file():
        raise CandidateError(f"candidate {p} does not exist or is not a file")
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise CandidateError(f"cannot read candidate {p}: {e}") from None
    if p.suffix == ".py":
        if not text.strip():
            raise CandidateError(f"candidate {p} is empty")
        return candidate_from_source(text, task, name=p.stem)
    if p.suffix == ".json":
        if task.format is not TaskFormat.SOL:
            raise CandidateError(f"{p} is a solution.json but the task is a KernelBench file: give a .py with ModelNew")
        return solution_candidate(text, name=p.stem)
    raise CandidateError(f"candidate {p} must be a .py module or a solution.json, got {p.suffix or 'no suffix'!r}")


PYTHON_LANGUAGES = {"pytorch", "triton", "cute_dsl", "cutile", "cudnn_frontend"}
CPP_LANGUAGES = {"cuda_cpp", "cutlass", "cudnn", "cublas"}


class SolutionSpec(BaseModel):
    """The `spec` of a SOL-ExecBench solution.json (fields we use; others are kept but ignored)."""

    model_config = ConfigDict(extra="allow")

    languages: list[str] = Field(min_length=1)
    entry_point: str
    destination_passing_style: bool = True
    target_hardware: list[str] = Field(default_factory=lambda: ["LOCAL"])

    @field_validator("entry_point")
    @classmethod
    def _validate_entry_point(cls, v: str) -> str:
        if "::" not in v:
            raise ValueError(f"entry_point must be 'file::function', got {v!r}")
        return v

    @field_validator("languages")
    @classmethod
    def _validate_languages(cls, v: list[str]) -> list[str]:
        unknown = set(v) - PYTHON_LANGUAGES - CPP_LANGUAGES
        if unknown:
            raise ValueError(f"unknown languages {sorted(unknown)}")
        if set(v) & PYTHON_LANGUAGES and set(v) & CPP_LANGUAGES:
            raise ValueError(f"Python and C++ languages cannot be mixed, got {v}")
        return v


class SourceFile(BaseModel):
    path: str
    content: str

    @field_validator("path")
    @classmethod
    def _validate_path(cls, v: str) -> str:
        if v.startswith("/") or ".." in Path(v).parts or not v:
            raise ValueError(f"source paths must be relative without '..', got {v!r}")
        return v


class Solution(BaseModel):
    """A SOL-ExecBench solution.json."""

    model_config = ConfigDict(extra="allow")

    name: str
    definition: str
    author: str = "unknown"
    spec: SolutionSpec
    sources: list[SourceFile] = Field(min_length=1)

    @field_validator("sources")
    @classmethod
    def _validate_sources(cls, v: list[SourceFile]) -> list[SourceFile]:
        paths = [s.path for s in v]
        if len(set(paths)) != len(paths):
            raise ValueError(f"duplicate source paths in {paths}")
        return v


def solution_candidate(text: str, name: str = "solution") -> Candidate:
    """A SOLUTION candidate from solution.json text; raises CandidateError on a malformed file."""
    try:
        sol = Solution.model_validate_json(text)
    except ValueError as e:
        first = str(e).splitlines()
        raise CandidateError(f"malformed solution.json: {' '.join(first[:3])}") from None
    entry_file = sol.spec.entry_point.split("::", 1)[0]
    if entry_file not in {s.path for s in sol.sources}:
        raise CandidateError(f"solution.json entry file {entry_file!r} is not among its sources")
    return Candidate(kind=CandidateKind.SOLUTION, source=text, entry=sol.spec.entry_point,
                     destination_passing=sol.spec.destination_passing_style,
                     language=sol.spec.languages[0], name=sol.name or name)


__all__ = [
    "Candidate", "CandidateKind", "Solution", "SolutionSpec", "candidate_from_source",
    "load_candidate", "needs_build", "solution_candidate", "stored_candidate", "infer_language", "normalized_source",
]
