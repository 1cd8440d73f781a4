"""Export the winning kernel in the task's own format, ready to drop in or submit.

KernelBench: `best/model_new.py` (the `ModelNew` module as judged) and `best/standalone.py`, the same
module plus a `__main__` block that checks it against the embedded reference and times both.
SOL-ExecBench: `best/solution.json` (inline sources, entry `kernel.py::run`, returning its outputs:
destination_passing_style false, as the guard judged it) and `best/kernel.py`.

What a file says it is, it is. A winner that builds C++ with `load_inline` at import gets no
solution.json (SOL-ExecBench's evaluator refuses such a Python solution, and its C++ family wants
sources and bindings kernelarc does not split out): `best/kernel.py` and `best/NOT_EXPORTED.txt`
saying why. A baseline that won is exported as the baseline, never as "found": for KernelBench the
reference class renamed `ModelNew` (eager) or a `ModelNew` holding `torch.compile` of the reference,
since KernelBench's checker refuses `class ModelNew(Model): pass`; for SOL-ExecBench a solution
named and described as that baseline. Names carry the task and the candidate.
"""

from __future__ import annotations

import io
import json
import tokenize
from pathlib import Path

from kernelarc.campaign.baselines import COMPILE, EAGER, baseline_candidates
from kernelarc.guard.candidate import Candidate, CandidateKind, infer_language
from kernelarc.task.model import Task, TaskFormat

_KB_COMPILE_DROP_IN = '''

# --- kernelarc: the torch.compile baseline won (no generated kernel beat it) ---
class ModelNew(torch.nn.Module):
    """torch.compile (default mode) of the reference, as the campaign judged it."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.reference = Model(*args, **kwargs)
        self._compiled = torch.compile(self.reference)

    def forward(self, *args):
        return self._compiled(*args)
'''
_BASELINE_WORDS = {EAGER: "PyTorch eager, the reference itself", COMPILE: "torch.compile (default mode) of the reference"}

_STANDALONE_MAIN = '''

# --- kernelarc: standalone check (python standalone.py) ---
_KERNELARC_REFERENCE = {reference!r}

if __name__ == "__main__":
    import time as _time

    _ref = {{}}
    exec(compile(_KERNELARC_REFERENCE, "reference.py", "exec"), _ref)
    _device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    _init = _ref["get_init_inputs"]()
    torch.manual_seed(0)
    _reference = _ref["Model"](*_init).to(_device)
    torch.manual_seed(0)
    _kernel = ModelNew(*_init).to(_device)
    torch.manual_seed(1)
    _inputs = [x.to(_device) if isinstance(x, torch.Tensor) else x for x in _ref["get_inputs"]()]

    def _ms(fn, reps=20):
        with torch.no_grad():
            fn()
            if _device == "cuda":
                torch.cuda.synchronize()
            t0 = _time.perf_counter()
            for _ in range(reps):
                fn()
            if _device == "cuda":
                torch.cuda.synchronize()
        return (_time.perf_counter() - t0) / reps * 1e3

    with torch.no_grad():
        _want, _got = _reference(*_inputs), _kernel(*_inputs)
    _want = _want if isinstance(_want, (tuple, list)) else [_want]
    _got = _got if isinstance(_got, (tuple, list)) else [_got]
    _err = max(float((g.float() - w.float()).abs().max()) for g, w in zip(_got, _want))
    print(f"max abs error {{_err:.3e}}; reference {{_ms(lambda: _reference(*_inputs)):.4f}} ms, "
          f"kernel {{_ms(lambda: _kernel(*_inputs)):.4f}} ms on {{_device}} (host clock, rough: use kernelarc eval)")
'''


def export_best(task: Task, candidate: Candidate, out_dir: Path, *, author: str = "kernelarc") -> list[Path]:
    """Write the winner under `out_dir` (created); return the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if candidate.kind is CandidateKind.SOLUTION:
        path = out_dir / "solution.json"
        path.write_text(candidate.source)
        return [path]
    baseline = which_baseline(task, candidate)
    if task.format is TaskFormat.KERNELBENCH:
        source = candidate.source if baseline is None else kernelbench_drop_in(task, baseline)
        module = out_dir / "model_new.py"
        module.write_text(source)
        standalone = out_dir / "standalone.py"
        header = "" if "import torch" in source else "import torch\n"
        standalone.write_text(header + source + _STANDALONE_MAIN.format(reference=task.reference_source))
        return [module, standalone]
    kernel = out_dir / "kernel.py"
    kernel.write_text(candidate.source)
    language = infer_language(candidate.source)
    if language == "cuda_cpp":
        note = out_dir / "NOT_EXPORTED.txt"
        note.write_text("No solution.json: this kernel builds C++ with torch.utils.cpp_extension (load_inline) when "
                        "imported, which SOL-ExecBench's evaluator refuses in a Python solution. kernel.py runs as "
                        "kernelarc judged it (entry `run`).\n")
        return [kernel, note]
    if baseline is None:
        name, description = f"{task.name}_kernelarc_{candidate.name}", f"Found by kernelarc: candidate {candidate.name}"
    else:
        name = f"{task.name}_baseline_{baseline.replace('torch.', '')}"
        description = f"Not found by kernelarc: {_BASELINE_WORDS[baseline]}; no candidate of the campaign beat it"
    solution = {
        "name": name,
        "definition": task.name,
        "author": author,
        "description": description,
        "spec": {
            "languages": [language],
            "target_hardware": ["LOCAL"],
            "entry_point": "kernel.py::run",
            "destination_passing_style": candidate.destination_passing,
        },
        "sources": [{"path": "kernel.py", "content": candidate.source}],
    }
    path = out_dir / "solution.json"
    path.write_text(json.dumps(solution, indent=2))
    return [path, kernel]


def which_baseline(task: Task, candidate: Candidate) -> str | None:
    """EAGER or COMPILE when `candidate` is that baseline's code, else None."""
    for name, baseline in baseline_candidates(task).items():
        if baseline.source == candidate.source:
            return name
    return None


def kernelbench_drop_in(task: Task, baseline: str) -> str:
    """A KernelBench baseline as a module whose `ModelNew` is its own class, not `Model` subclassed."""
    source = task.reference_source if "import torch\n" in task.reference_source else "import torch\n" + task.reference_source
    if baseline == COMPILE:
        return source + _KB_COMPILE_DROP_IN
    return "# --- kernelarc: the eager baseline won: the reference, its class renamed ModelNew ---\n" + rename(
        source, "Model", "ModelNew")


def rename(source: str, old: str, new: str) -> str:
    """`source` with every Python name `old` (not in strings or comments) written `new`."""
    lines = source.splitlines(keepends=True)
    spots = [t.start for t in tokenize.generate_tokens(io.StringIO(source).readline)
             if t.type == tokenize.NAME and t.string == old]
    for row, col in reversed(spots):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[col + len(old):]
    return "".join(lines)


__all__ = ["export_best", "kernelbench_drop_in", "which_baseline"]
