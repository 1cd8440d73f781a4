"""model_summary.md: the per-region table and the whole model's figures of a `kernelarc model` run."""

from __future__ import annotations


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def render_markdown(summary: dict) -> str:
    """The summary as Markdown: one row per region (and per region that could not be captured), then
    the whole model against eager and torch.compile with the correctness margin."""
    profile = summary["profile"]
    lines = [f"# kernelarc model: {summary['target']} on {summary['device']}", "",
             f"Profile: {profile['model_ms']:.3f} ms per forward ({profile['method']}).", "",
             "| # | region | modules | ms/forward | share | Amdahl bound | region speedup | e2e measured | e2e Amdahl | note |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary["regions"]:
        lines.append(f"| {r['rank']} | {r['kind']} | {', '.join(r['modules'])} | {r['ms']:.3f} | {100 * r['share']:.1f}% | "
                     f"{_x(r['amdahl_bound'])} | {_x(r.get('region_speedup'))} | {_x(r.get('e2e_speedup'))} | "
                     f"{_x(r.get('e2e_estimate'))} | {r.get('note', 'not optimized (below --top)')} |")
    for f in profile["uncaptured"]:
        lines.append(f"| - | {f['kind']} | {f['module']} | {f['ms']:.3f} | | | | | | {f['error']} |")
    o = summary["overall"]
    lines += ["", "## Whole model", ""]
    if not o.get("measured"):
        lines.append(o["note"])
    elif o["swapped"] == 0 and o["compile_ms"] is None:
        lines.append(f"{o['reason']}; torch.compile of it was not timed ({o['compile_status']}: {o['compile_reason']})")
    elif o["swapped"] == 0:
        lines += [f"- {o['reason']}: eager {o['eager_ms']} ms ({o['timing']} on {o['device_name']}, spread {o['spread']})",
                  f"- torch.compile of the whole model {o['compile_ms']} ms ({o['compile_status']}): the model as it is "
                  f"runs {_x(o['speedup_vs_compile'])} torch.compile's speed"]
    else:
        tol = o.get("tolerance") or {}
        lines += [f"- guard verdict of the patched model against eager: {o['status']} ({o['reason']})",
                  f"- eager {o['eager_ms']} ms, patched {o['patched_ms']} ms: {_x(o['speedup_vs_eager'])} over eager "
                  f"({o['timing']} on {o['device_name']}, spread {o['spread']})",
                  f"- torch.compile {o['compile_ms']} ms: {_x(o['speedup_vs_compile'])} over torch.compile "
                  f"({o['compile_status']})",
                  f"- correctness on fresh inputs: max abs error {o['max_abs_error']}, max rel error {o['max_rel_error']}; "
                  f"tolerance atol {tol.get('atol')}, rtol {tol.get('rtol')} ({tol.get('source')})"]
    return "\n".join(lines) + "\n"


__all__ = ["render_markdown"]
