#!/usr/bin/env bash
# Issue 15: kernelarc's device times beside SOL-ExecBench's own evaluator's, same card, same code.
# For each problem dir: a short built-in campaign, then its best/solution.json judged twice, by
# `kernelarc eval --timing device --json` and by the official evaluator (sol-official). Compare with
# `python bench/gpu/official_compare.py OUT` (per workload: candidate and reference, both tools).
#
#   SOL_OFFICIAL=PATH/TO/sol-official bash bench/gpu/official_agreement.sh OUT SECONDS PROBLEM_DIR...
#
# SECONDS bounds each campaign (--time-limit); every step also runs under `timeout`. Campaign run dirs
# go to $WORK (default /tmp/kernelarc-agreement, kept between calls on a warm machine: a problem whose
# campaign already left a solution is not searched again); OUT gets only the files compared.
# Needs the set-up of bench/gpu/README.md (bwrap on PATH, wheels incl. pyelftools and cupti-python).
set -uo pipefail
out=$1; secs=$2; shift 2
official=${SOL_OFFICIAL:?set SOL_OFFICIAL to the sol-official script}
work=${WORK:-/tmp/kernelarc-agreement}
mkdir -p "$out" "$work"
source bench/gpu/install_wheels.sh
kernelarc=(python3 -c "from kernelarc.cli.main import main; main()")
for p in "$@"; do
  name=$(basename "$p")
  start=$(date +%s)
  sol="$work/$name/best/solution.json"
  [ -f "$sol" ] || timeout $((secs + 180)) "${kernelarc[@]}" optimize "$p" --device cuda --time-limit "$secs" \
    --budget 24 --fresh-memory --out "$work/$name" > "$out/$name.optimize.log" 2>&1
  [ -f "$sol" ] && cp "$sol" "$out/$name.solution.json"
  if [ -f "$sol" ]; then
    timeout 240 "${kernelarc[@]}" eval "$p" "$sol" --device cuda --timing device --json > "$out/$name.eval.json" 2> "$out/$name.eval.err"
    timeout 300 bash "$official" "$p" "$sol" > "$out/$name.official.jsonl" 2> "$out/$name.official.err"
  fi
  echo "$name: $(( $(date +%s) - start )) s, solution: $([ -f "$sol" ] && echo yes || echo no)"
done
