#!/usr/bin/env bash
# Issue 15: kernelarc's device times beside SOL-ExecBench's own evaluator's, same card, same code.
# For each problem dir: a short built-in campaign, then its best/solution.json judged twice, by
# `kernelarc eval --timing device --json` and by the official evaluator (sol-official). Compare with
# `python bench/gpu/official_compare.py OUT` (per workload: candidate and reference, both tools).
#
#   SOL_OFFICIAL=PATH/TO/sol-official bash bench/gpu/official_agreement.sh OUT SECONDS PROBLEM_DIR...
#
# SECONDS bounds each campaign (--time-limit); every step also runs under `timeout`.
# Needs the set-up of bench/gpu/README.md (bwrap on PATH, wheels incl. pyelftools and cupti-python).
set -uo pipefail
out=$1; secs=$2; shift 2
official=${SOL_OFFICIAL:?set SOL_OFFICIAL to the sol-official script}
mkdir -p "$out"
source bench/gpu/install_wheels.sh
kernelarc=(python3 -c "from kernelarc.cli.main import main; main()")
for p in "$@"; do
  name=$(basename "$p")
  start=$(date +%s)
  timeout $((secs + 180)) "${kernelarc[@]}" optimize "$p" --device cuda --time-limit "$secs" --budget 24 --fresh-memory \
    --out "$out/runs/$name" > "$out/$name.optimize.log" 2>&1
  sol="$out/runs/$name/best/solution.json"
  if [ -f "$sol" ]; then
    timeout 240 "${kernelarc[@]}" eval "$p" "$sol" --device cuda --timing device --json > "$out/$name.eval.json" 2> "$out/$name.eval.err"
    timeout 240 bash "$official" "$p" "$sol" > "$out/$name.official.jsonl" 2> "$out/$name.official.err"
  fi
  echo "$name: $(( $(date +%s) - start )) s, solution: $([ -f "$sol" ] && echo yes || echo no)"
done
