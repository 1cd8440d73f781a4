"""Export the winning kernel in the task's own format, ready to drop in or submit.

KernelBench: `best/model_new.py` (the `ModelNew` module as judged) and `best/standalone.py`, the same
module plus a `__main__` block that checks it against the embedded reference and times both.
SOL-ExecBench: `best/solution.json` (inline sources, entry `kernel.py::run`, returning its outputs:
destination_passing_style false, as the guard judged it) and `best/kernel.py`.
On request (`--export torch-op`), either format also as a registered PyTorch custom op:
`best/torch_op.py` beside the kernel file and `best/reference.py` (its fake implementation), so the
kernel drops into a model and traces under torch.compile and torch.export (docs/model.md).

What a file says it is, it is. A winner that builds C++ with `load_inline` at import gets no
solution.json (SOL-ExecBench's evaluator refuses such a Python solution, and its C++ family wants
sources and bindings kernelarc does not split out): `best/kernel.py` and `best/NOT_EXPORTED.txt`
saying why. A baseline that won is exported as the baseline, never as "found": for KernelBench the
reference class renamed `ModelNew` (eager) or a `ModelNew` holding `torch.compile` of the reference,
since KernelBench's checker refuses `class ModelNew(Model): pass`; for SOL-ExecBench a solution
named and described as that baseline. Names carry the task and the candidate.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from pathlib import Path

import jinja2

from kernelarc.campaign.baselines import COMPILE, EAGER, baseline_candidates
from kernelarc.errors import UserError
from kernelarc.guard.candidate import Candidate, CandidateKind, infer_language
from kernelarc.task.model import KERNELBENCH_TOLERANCE_BY_DTYPE, Task, TaskFormat
from kernelarc.task.runtime import INIT_SEED

TORCH_OP = "torch-op"
"""`--export torch-op`: the winner also as a registered PyTorch custom op (`export_torch_op`)."""
EXPORT_KINDS = (TORCH_OP,)

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
# The kernel above was judged in kernelarc's sandbox; code can tell where it runs, so check it here too:
# this exits 1 when an output is out of the task's tolerance against the reference on this machine.
_KERNELARC_REFERENCE = {reference!r}
_KERNELARC_TOLERANCE = {tolerance!r}
"""Per output (atol, rtol) as the task declares them, else per output dtype (KernelBench's rule)."""

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
    def _tolerance(index, dtype):
        declared = _KERNELARC_TOLERANCE["declared"]
        if declared:
            return declared[min(index, len(declared) - 1)]
        return _KERNELARC_TOLERANCE["by_dtype"].get(str(dtype).replace("torch.", ""), (0.0, 0.0))

    _bad = [_i for _i, (_g, _w) in enumerate(zip(_got, _want))
            if _g.shape != _w.shape or not torch.allclose(_g.float(), _w.float(), atol=_tolerance(_i, _w.dtype)[0],
                                                          rtol=_tolerance(_i, _w.dtype)[1])]
    if _bad or len(_got) != len(_want):
        print(f"MISMATCH: output(s) {{_bad or 'count'}} out of tolerance against the reference here (max abs error "
              f"{{_err:.3e}}): do not use this kernel")
        raise SystemExit(1)
    print(f"max abs error {{_err:.3e}}; reference {{_ms(lambda: _reference(*_inputs)):.4f}} ms, "
          f"kernel {{_ms(lambda: _kernel(*_inputs)):.4f}} ms on {{_device}} (host clock, rough: use kernelarc eval)")
'''


def _standalone_tolerance(task: Task) -> dict:
    """What standalone.py checks against: the first workload's declared (atol, rtol) per output, else
    KernelBench's per-dtype rule."""
    declared = [(t.atol, t.rtol) for t in task.workloads[0].tolerance] if task.workloads else []
    return {"declared": declared, "by_dtype": {d: (tol, tol) for d, tol in KERNELBENCH_TOLERANCE_BY_DTYPE.items()}}


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
        standalone.write_text(header + source + _STANDALONE_MAIN.format(reference=task.reference_source,
                                                                         tolerance=_standalone_tolerance(task)))
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
    """EAGER or COMPILE when `candidate` is that baseline's code, else None: its module's text, or a
    solution.json whose one source file is that text with `run` its entry point (as `export_best` writes it)."""
    code = candidate.source
    if candidate.kind is CandidateKind.SOLUTION:
        sources = json.loads(candidate.source)["sources"]
        if len(sources) != 1 or candidate.entry != f"{sources[0]['path']}::run":
            return None
        code = sources[0]["content"]
    for name, baseline in baseline_candidates(task).items():
        if baseline.source == code:
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


class ExportError(UserError):
    """A winner that cannot be written in the form asked for (the message says why)."""


_SCALAR_TYPES = {"bool": "bool", "int64": "int", "int32": "int", "float32": "float", "float64": "float"}


def op_name(task: Task, candidate: Candidate) -> str:
    """The op's name in the `kernelarc` namespace: the task's name and the kernel's hash, so two
    kernels of one task (or two tasks of one name) can be registered in one process."""
    stem = re.sub(r"\W", "_", task.name).strip("_").lower() or "task"
    return f"{'t_' if stem[0].isdigit() else ''}{stem}_{candidate.hash[:8]}"


def _forward_params(task: Task) -> list[str]:
    """Names of the reference's inputs: SOL-ExecBench's, or `Model.forward`'s (`arg<i>` for `*args`)."""
    if task.format is TaskFormat.SOL:
        return list(task.input_names)
    for node in ast.parse(task.reference_source).body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward" and item.args.vararg is None:
                    return [a.arg for a in item.args.args[1:]]
    return [f"arg{i}" for i in range(len(task.workloads[0].inputs))]


def export_torch_op(task: Task, candidate: Candidate, out_dir: Path) -> list[Path]:
    """Write `torch_op.py` (and `reference.py`) beside the kernel file `export_best` wrote in `out_dir`.

    Raises:
        ExportError: the kernel is a multi-file solution.json, or the task's input and output specs
            are unknown (the loader could not infer them), so no op schema can be written.
    """
    if candidate.kind is CandidateKind.SOLUTION:
        raise ExportError(f"{task.name}: the winner is a solution.json; only a Python module (ModelNew or run) "
                          "is exported as a torch op")
    workload = task.workloads[0]
    params = _forward_params(task)
    if not workload.inputs or not workload.outputs or len(params) != len(workload.inputs):
        raise ExportError(f"{task.name}: its inputs and outputs could not be inferred, so no op schema can be written")
    typed = []
    for name, spec in zip(params, workload.inputs):
        if spec.is_scalar and spec.dtype not in _SCALAR_TYPES:
            raise ExportError(f"{task.name}: input {name} is a {spec.dtype} scalar, which a torch op cannot take")
        typed.append(f"{name}: {_SCALAR_TYPES[spec.dtype] if spec.is_scalar else 'torch.Tensor'}")
    tensors = [name for name, spec in zip(params, workload.inputs) if not spec.is_scalar]
    if not tensors:
        raise ExportError(f"{task.name}: it takes no tensor, so the op could not tell which device to run on")
    n_out = len(workload.outputs)
    kernelbench = task.format is TaskFormat.KERNELBENCH
    kernel_file = "model_new.py" if kernelbench else "kernel.py"
    if not (out_dir / kernel_file).is_file():
        export_best(task, candidate, out_dir)
    text = _TEMPLATES.get_template("torch_op.py.j2").render(
        task=task.name, candidate=candidate.name, op=op_name(task, candidate), params=params, typed_params=typed,
        returns="torch.Tensor" if n_out == 1 else f"tuple[{', '.join(['torch.Tensor'] * n_out)}]", outputs=n_out,
        first_tensor=tensors[0], kernelbench=kernelbench, kernel_file=kernel_file, init_seed=INIT_SEED,
        entry_desc="ModelNew" if kernelbench else "`run`", destination_passing=candidate.destination_passing)
    reference = out_dir / "reference.py"
    reference.write_text(task.reference_source)
    op_file = out_dir / "torch_op.py"
    op_file.write_text(text)
    return [op_file, reference]


def export_run(run_dir: Path, kind: str = TORCH_OP) -> list[Path]:
    """Export the winner of the finished campaign in `run_dir` as `kind` into `run_dir/best/`, and list
    the files in summary.json's `best.files` (so `optimize --resume RUN_DIR --export` works after the fact).

    Raises:
        ExportError: an unknown kind, no finished campaign or no winner in `run_dir`, or a winner that
            cannot be written as `kind`.
    """
    from kernelarc.campaign.run import DB_NAME  # run -> summary -> export: imported here, not at the top
    from kernelarc.guard.candidate import stored_candidate
    from kernelarc.memory import Store
    from kernelarc.task.loader import load_task

    if kind not in EXPORT_KINDS:
        raise ExportError(f"unknown export {kind!r}: choose from {', '.join(EXPORT_KINDS)}")
    summary_file = run_dir / "summary.json"
    if not summary_file.is_file():
        raise ExportError(f"{run_dir}: no finished campaign (summary.json is missing)")
    summary = json.loads(summary_file.read_text())
    best = summary.get("best")
    if not best:
        raise ExportError(f"{run_dir}: the campaign has no winner to export")
    store = Store(run_dir / DB_NAME)
    task = load_task(store.get_meta().task_path)
    record = store.candidate(best["candidate_id"])
    candidate = stored_candidate(record.kind, record.source, task, name=f"c{best['candidate_id']}")
    files = export_torch_op(task, candidate, run_dir / "best")
    best["files"] = sorted(set(best.get("files", [])) | {str(f.relative_to(run_dir)) for f in files})
    summary_file.write_text(json.dumps(summary, indent=2, default=str))
    return files


_TEMPLATES = jinja2.Environment(loader=jinja2.PackageLoader("kernelarc.campaign", "templates"),
                                undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                keep_trailing_newline=True, autoescape=False)


__all__ = ["EXPORT_KINDS", "ExportError", "TORCH_OP", "export_best", "export_run", "export_torch_op", "kernelbench_drop_in",
           "op_name", "which_baseline"]
