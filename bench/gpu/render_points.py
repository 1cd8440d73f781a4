"""Write every point of one built-in family for a task as candidate files (for `kernelarc eval` on a GPU).

    python bench/gpu/render_points.py TASK FAMILY[@I,J...] OUT_DIR

Each point (or only points I, J, ... of the family's order, when a slow-to-build family has a few worth
judging) becomes OUT_DIR/<task>.<family>.<n>.py, with the point in its docstring; the family's
reason is printed instead when it does not apply. Rendering needs no GPU, so the files can be made
here and carried to the device machine, where `kernelarc eval TASK FILE --device cuda --json` judges
each against the reference: the quickest way to time a new move on the card without a campaign.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import get_family
from kernelarc.task.loader import load_task


def main(task_path: str, family_spec: str, out_dir: str) -> int:
    family_name, _, picks = family_spec.partition("@")
    task = load_task(Path(task_path))
    analysis = analyze(task)
    family = get_family(family_name)
    reason = family.applies(analysis)
    if reason:
        print(f"{family_name} does not apply to {task.name}: {reason}", file=sys.stderr)
        return 2
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    wanted = {int(i) for i in picks.split(",")} if picks else None
    for n, params in enumerate(family.space(analysis)):
        if wanted is not None and n not in wanted:
            continue
        path = out / f"{task.name}.{family_name}.{n}.py"
        path.write_text(family.render(analysis, params).source)
        print(path, params)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
