#!/usr/bin/env bash
# Issue 18 on one machine with several GPUs, through a local Ray head that holds all of them:
#   campaign  one task (CAMPAIGN_TASK) with --executor ray and as many agents as GPUs: summary.json's
#             guard.lock_held_s_by_device gives each GPU's lock use (gpu_lock_use.txt: seconds, share of wall)
#   ray       a bench of TASKS (bench/suites/h200) with --executor ray: one task's campaign per GPU at a time
#   local     the same bench with the local executor on GPU 0 only
# Everything lands under $OUT: walls.txt (wall seconds per step), each step's results (results.json,
# results.md, summary.json) and the Ray head's log. Each step fits a 10-minute device call at the
# defaults; STEPS="ray" (etc.) runs some of them.
#
#   bench/gpu/ray_multi_gpu.sh
#   STEPS=local TASKS="rmsnorm_bf16 softmax_fp32" BENCH_OPTS="--budget 4 --agents 2" bench/gpu/ray_multi_gpu.sh
#
# Ray must import, or .whl/ray/ must hold ray 2.60.0's wheel for this Python and the wheels of the
# dependencies the image lacks (pip download ray==2.60.0 --python-version 3.12 --only-binary=:all:
# --platform manylinux2014_x86_64 -d .whl/ray). The ray wheel is 79 MB, more than one device call
# carries (64 MiB): carry it in two calls as split parts (split -b 40M), joined here.
set -euo pipefail
out=${OUT:-/tmp/out}
py=${PYTHON:-python3}
steps=${STEPS:-campaign ray local}
campaign_task=${CAMPAIGN_TASK:-rmsnorm_bf16}
tasks=${TASKS:-rmsnorm_bf16 softmax_fp32 row_mean_fp32 layernorm_residual_bf16}
bench_opts=${BENCH_OPTS:---budget 6 --agents 2 --no-compile-baselines --time-limit 240}
mkdir -p "$out"

PYTHON=$py . bench/gpu/install_wheels.sh
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
if ! $py -c "import ray" 2>/dev/null; then
  ls .whl/ray/ray-*.whl.part* >/dev/null 2>&1 && cat .whl/ray/ray-*.whl.part* >".whl/ray/$(basename "$(ls .whl/ray/ray-*.whl.part* | head -1)" | sed 's/\.part.*//')"
  $py -m pip install -q --no-index --no-compile --target /tmp/site --find-links .whl/ray ray==2.60.0
fi
if [ -d .gpu/bwrap ]; then  # the guard's sandbox (bench/gpu/README.md); Ray's workers inherit PATH from `ray start`
  mkdir -p /tmp/kbw && cp -r .gpu/bwrap/* /tmp/kbw/ && chmod -R a+rx /tmp/kbw && export PATH=/tmp/kbw:$PATH
fi
ngpu=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=index,name,uuid --format=csv,noheader >"$out/gpus.txt"
kernelarc() { $py -c "from kernelarc.cli.main import main; main()" "$@"; }
timed() {  # timed NAME COMMAND...: run it, append "NAME <seconds> rc=<rc>" to walls.txt
  local name=$1 t0=$SECONDS rc=0; shift
  "$@" >"$out/$name.log" 2>&1 || rc=$?
  echo "$name $((SECONDS - t0)) rc=$rc" | tee -a "$out/walls.txt"
}

$py -m ray.scripts.scripts start --head --num-gpus "$ngpu" --include-dashboard=false --disable-usage-stats \
  >"$out/ray_head.log" 2>&1
trap '$py -m ray.scripts.scripts stop --force >>"$out/ray_head.log" 2>&1' EXIT
export KERNELARC_HOME=/tmp/kernelarc-home-ray  # the nodes' device locks and caches; the same for every step

for step in $steps; do
  case $step in
    campaign)
      timed campaign kernelarc optimize "bench/suites/h200/$campaign_task.py" --executor ray --agents "$ngpu" \
        --budget $((3 * ngpu)) --no-compile-baseline --fresh-memory --out "$out/campaign"
      $py - "$out/campaign/summary.json" >"$out/gpu_lock_use.txt" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
wall = s["wall_s"]
print(f"wall {wall:.1f} s, {s['guard']['evaluations']} evaluations")
for device, held in sorted(s["guard"]["lock_held_s_by_device"].items()):
    print(f"{device} held {held:.1f} s = {held / wall:.0%} of the wall time")
EOF
      cat "$out/gpu_lock_use.txt";;
    ray)
      timed bench_ray kernelarc bench bench/suites/h200 --tasks "${tasks// /,}" $bench_opts --executor ray \
        --out "$out/bench_ray";;
    local)
      CUDA_VISIBLE_DEVICES=0 timed bench_local kernelarc bench bench/suites/h200 --tasks "${tasks// /,}" $bench_opts \
        --device cuda --out "$out/bench_local";;
  esac
done
for dir in bench_ray bench_local; do  # per-task results side by side: task, status, speedup over eager, campaign wall
  [ -f "$out/$dir/results.json" ] && $py -c "
import json, sys
for r in json.load(open(sys.argv[1]))['rows']:
    print(sys.argv[2], r['task'], r['status'], r.get('speedup_vs_eager'), round(r.get('wall_s') or 0, 1))" \
    "$out/$dir/results.json" "$dir" | tee -a "$out/per_task.txt"
done
