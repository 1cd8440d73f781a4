"""How well the built-in agents generalize: on KernelBench problems shrunk to CPU sizes, the share of
problems where at least one generated kernel (a Triton family, not a baseline, a library swap or
ATen calls from C++) passes the guard, by level and by kernel kind (issue 16).

    python bench/generality.py ../shared/kernelbench --out DIR [--only level1/19_ReLU.py,...] [--jobs 2]

Writes DIR/rows.jsonl as it goes and DIR/generality.json at the end (per problem: whether it ran at CPU sizes, its kind, each tried family's
status and reason) and prints the table. Runs on the CPU (Triton through its interpreter); the guard
judges every candidate as in a campaign. Problems that do not run at the shrunk sizes (their
reference fails or takes more than a few seconds) are left out of the shares, and counted.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import datetime
import json
import sys
import time
from pathlib import Path

CPU_CAP = 16
"""Module-level integer constants above this are divided by the smallest power of two that brings
them under it (ratios and power-of-two divisibility kept: heads still divide widths, groups channels)."""
GENERATED_LANGUAGES = ("triton",)
"""Languages whose candidates count as generated kernels on the CPU (CUDA C++ needs a GPU)."""
REFERENCE_LIMIT_S = 5.0


def shrink(source: str, cap: int = CPU_CAP) -> str:
    """`source` with its large module-level integer constants scaled down (see CPU_CAP), those in a
    list or tuple of them too (`hidden_layer_sizes = [32768, 32768]`)."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):  # `h = w = 128` too
            if isinstance(node.value, (ast.List, ast.Tuple)):
                node.value.elts = [_shrunk(e, cap) for e in node.value.elts]
            else:
                node.value = _shrunk(node.value, cap)
    return ast.unparse(tree)


def _shrunk(node: ast.expr, cap: int) -> ast.expr:
    value = _int_constant(node)
    if value is None or value <= cap:
        return node
    while value > cap:
        value //= 2
    return ast.Constant(value)


def _int_constant(node: ast.expr) -> int | None:
    """The value of an integer literal or of arithmetic on such literals (`2048 * 2`), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Pow)):
        left, right = _int_constant(node.left), _int_constant(node.right)
        if left is None or right is None or (isinstance(node.op, ast.Pow) and right > 64):
            return None
        if isinstance(node.op, ast.FloorDiv):
            return left // right if right else None
        return {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.Pow: int.__pow__}[
            type(node.op)](left, right)
    return None


def judge_problem(path: str, out_dir: str) -> dict:
    """Shrink one problem, check that it runs, then judge each applicable generated-kernel family's first
    point as a campaign on the CPU orders them (largest programs first: `interpreter_order`)."""
    from kernelarc.agents.builtin.analysis import analyze
    from kernelarc.agents.builtin.moves import all_families
    from kernelarc.agents.builtin.search import interpreter_order, why_not
    from kernelarc.guard import GuardSettings, candidate_from_source
    from kernelarc.guard.judge import Judge
    from kernelarc.task.loader import load_task
    from kernelarc.task.runtime import TaskRuntime

    original = Path(path)
    row = {"problem": f"{original.parent.name}/{original.name}", "level": original.parent.name}
    shrunk = Path(out_dir) / "shrunk" / original.parent.name / original.name
    shrunk.parent.mkdir(parents=True, exist_ok=True)
    try:
        shrunk.write_text(shrink(original.read_text()))
        task = load_task(shrunk)
        runtime = TaskRuntime(task, "cpu")
        started = time.monotonic()
        runtime.reference()(*runtime.make_inputs(task.workloads[0], 1))
        if time.monotonic() - started > REFERENCE_LIMIT_S:
            return {**row, "runs": False, "why": f"the reference takes over {REFERENCE_LIMIT_S:g} s at CPU sizes"}
    except Exception as e:  # noqa: BLE001 - a problem that does not run at these sizes is counted apart
        return {**row, "runs": False, "why": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
    analysis = analyze(task)
    row.update(runs=True, kind=task.kernel_type, capture_error=analysis.capture_error, tried=[], passed=None)
    settings = GuardSettings(rounds=2, cpu_iterations=3, warmup=1, compile_timeout_s=120, run_timeout_s=120)
    families = [f for f in all_families() if f.language in GENERATED_LANGUAGES]
    with Judge(task) as judge:
        for family in families:
            reason = why_not(family, analysis)
            if reason is not None:
                row["tried"].append({"family": family.name, "applies": False, "why": reason[:200]})
                continue
            try:
                move = family.render(analysis, interpreter_order(family.space(analysis))[0])
            except Exception as e:  # noqa: BLE001 - a family's own bug counts against it
                row["tried"].append({"family": family.name, "applies": True, "status": "RENDER_ERROR",
                                     "why": f"{type(e).__name__}: {e}"[:200]})
                continue
            ev = judge.evaluate(candidate_from_source(move.source, task), device="cpu", settings=settings)
            row["tried"].append({"family": family.name, "applies": True, "status": ev.status.value,
                                 "why": ev.reason[:200]})
            if ev.correct:
                row["passed"] = family.name
                break
    return row


def table(rows: list[dict]) -> str:
    ran = [r for r in rows if r["runs"]]
    lines = [f"{len(rows)} problems; {len(ran)} run at CPU sizes; {sum(1 for r in ran if r['passed'])} of those "
             "got a passing generated kernel", "", "| group | problems that run | with a passing generated kernel | share |",
             "|---|---|---|---|"]
    groups: dict[str, list[dict]] = {}
    for r in ran:
        groups.setdefault(r["level"], []).append(r)
        groups.setdefault(f"kind: {r['kind']}", []).append(r)
    for name in sorted(groups):
        g = groups[name]
        ok = sum(1 for r in g if r["passed"])
        lines.append(f"| {name} | {len(g)} | {ok} | {100 * ok / len(g):.0f}% |")
    total = sum(1 for r in ran if r["passed"])
    lines.append(f"| all | {len(ran)} | {total} | {100 * total / max(len(ran), 1):.0f}% |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path, help="a KernelBench folder with level1/, level2/, level3/")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", default="", help="comma-separated LEVEL/FILE names")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    only = {p for p in args.only.split(",") if p}
    problems = sorted(p for p in args.root.glob("level*/*.py") if not only or f"{p.parent.name}/{p.name}" in only)
    rows = []
    partial = args.out / "rows.jsonl"  # each row as it comes: a run cut short keeps what it measured
    partial.write_text("")
    with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
        for row in pool.map(judge_problem, [str(p) for p in problems], [str(args.out)] * len(problems)):
            rows.append(row)
            with partial.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(f"{row['problem']}: {'skip (' + row['why'] + ')' if not row['runs'] else row['passed'] or 'none'}",
                  flush=True)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv), "cap": CPU_CAP}
    (args.out / "generality.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
