#!/usr/bin/env bash
# Judge every point of some built-in families on a lent GPU machine, without a campaign.
#
#   bench/gpu/points_check.sh WAIT_S TASK:FAMILY[@I,J...]...   (@: only those points, render_points.py)
#
# (SUITE=dir picks the suite, default bench/suites/h200; GPUS=n spreads the candidates over the first
# n GPUs, one `kernelarc eval` per GPU at a time; DEVICE=cpu runs it all on the CPU, for its test;
# EVAL_TIMEOUT_S caps one evaluation, default 280 s: nvcc builds a CUTLASS kernel in about a minute.)
# Each TASK:FAMILY is rendered here by bench/gpu/render_points.py into $OUT/points, every file is
# judged against the task's reference with `kernelarc eval --json` into $OUT/evals/NAME.json, and
# $OUT/points.tsv sums them up. The rendered files and evaluations come back packed in $OUT/points.tgz:
# a device call returns at most 8 files. No evaluation starts after WAIT_S seconds, so the call ends in time:
# a device call must be self-contained (docs/benchmarks.md). Expects the missing Python packages as
# wheels in .whl/, as bench/gpu/suite_session.sh does.
set -u
shopt -s nullglob
wait_s=$1; shift
out=${OUT:-/tmp/out}
suite=${SUITE:-bench/suites/h200}
py=${PYTHON:-python3}
gpus=${GPUS:-1}
device=${DEVICE:-cuda}
per_eval=${EVAL_TIMEOUT_S:-280}
mkdir -p "$out/points" "$out/evals"

PYTHON=$py . bench/gpu/install_wheels.sh
export PYTHONUNBUFFERED=1

files=()  # in the order given, each family's points in its search order: what matters most runs first
for pair in "$@"; do
  rendered=$($py bench/gpu/render_points.py "$suite/${pair%%:*}.py" "${pair##*:}" "$out/points") \
    || { echo "$pair: not rendered"; continue; }
  echo "$rendered"
  while read -r path _; do files+=("$path"); done <<<"$rendered"
done

deadline=$((SECONDS + wait_s))
for ((g = 0; g < gpus; g++)); do
  (
    for ((i = g; i < ${#files[@]}; i += gpus)); do
      [ $SECONDS -lt $deadline ] || { echo "gpu $g: deadline, stopped before ${files[i]}"; break; }
      name=$(basename "${files[i]}" .py)
      where=$device; [ "$device" = cuda ] && where=cuda:$g
      start=$SECONDS
      timeout "$per_eval" $py -c "from kernelarc.cli.main import main; main()" eval "$suite/${name%%.*}.py" \
        "${files[i]}" --device "$where" --json >"$out/evals/$name.json" 2>"$out/evals/$name.err"
      echo "gpu $g: $name rc=$? $((SECONDS - start)) s"
    done
  ) &
done
wait

$py - "$out" <<'EOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
lines = ["candidate\tverdict\tstatus\ttiming\tspeedup\tlatency_ms\tincumbent_ms\tnoise\treason"]
for path in sorted((out / "evals").glob("*.json")):
    try:
        e = json.loads(path.read_text())
    except ValueError:
        lines.append(f"{path.stem}\t-\tno result\t\t\t\t\t\t{(path.with_suffix('.err').read_text() or '')[-200:]!r}")
        continue
    cells = [e.get(k) for k in ("verdict", "status", "timing", "speedup", "latency_ms", "incumbent_ms", "noise")]
    lines.append("\t".join([path.stem, *("" if c is None else str(c) for c in cells), e.get("reason", "")[:200]]))
(out / "points.tsv").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
tar czf "$out/points.tgz" -C "$out" points evals && rm -r "$out/points" "$out/evals"
