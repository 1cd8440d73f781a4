"""Export the winning kernel in the task's own format, ready to drop in or submit.

KernelBench: `best/model_new.py` (the `ModelNew` module as judged) and `best/standalone.py`, the same
module plus a `__main__` block that checks it against the embedded reference and times both.
SOL-ExecBench: `best/solution.json` (inline sources, entry `kernel.py::run`, returning its outputs:
destination_passing_style false, as the guard judged it) and `best/kernel.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

from kernelarc.guard.candidate import Candidate, CandidateKind, infer_language
from kernelarc.task.model import Task, TaskFormat

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
    if task.format is TaskFormat.KERNELBENCH:
        module = out_dir / "model_new.py"
        module.write_text(candidate.source)
        standalone = out_dir / "standalone.py"
        header = "" if "import torch" in candidate.source else "import torch\n"
        standalone.write_text(header + candidate.source + _STANDALONE_MAIN.format(reference=task.reference_source))
        return [module, standalone]
    kernel = out_dir / "kernel.py"
    kernel.write_text(candidate.source)
    solution = {
        "name": f"{task.name}_kernelarc",
        "definition": task.name,
        "author": author,
        "description": f"Found by kernelarc; {candidate.name}",
        "spec": {
            "languages": [infer_language(candidate.source) if infer_language(candidate.source) != "cuda_cpp" else "pytorch"],
            "target_hardware": ["LOCAL"],
            "entry_point": "kernel.py::run",
            "destination_passing_style": candidate.destination_passing,
        },
        "sources": [{"path": "kernel.py", "content": candidate.source}],
    }
    path = out_dir / "solution.json"
    path.write_text(json.dumps(solution, indent=2))
    return [path, kernel]


__all__ = ["export_best"]
