#!/usr/bin/env bash
# Issue 15: kernelarc's device times beside SOL-ExecBench's own evaluator's, same card, same code.
# For each problem dir: a solution.json (a short built-in campaign's best, or, given as PROBLEM_DIR=WHICH, the
# problem's `eager` or `torch.compile` baseline or a candidate file with `run`: bench/gpu/solution_json.py),
# judged by `kernelarc eval --timing device --json` and by the official evaluator (sol-official), one after
# the other, REPEAT times (default 1; each repeat with fresh compiler caches for both tools, so a compiled
# solution's autotuning runs again). Compare with `python bench/gpu/official_compare.py OUT` (per workload:
# candidate and reference, both tools; repeat i > 1 of NAME is the row NAME~rI).
#
#   SOL_OFFICIAL=PATH/TO/sol-official [REPEAT=N] bash bench/gpu/official_agreement.sh OUT SECONDS PROBLEM_DIR[=WHICH]...
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
for arg in "$@"; do
  p=${arg%%=*}; which=""; [ "$arg" != "$p" ] && which=${arg#*=}
  name=$(basename "$p")
  start=$(date +%s)
  if [ -n "$which" ]; then
    sol="$work/$name/fixed/solution.json"
    [ -f "$sol" ] || python3 bench/gpu/solution_json.py "$p" "$which" "$work/$name/fixed" > "$out/$name.solution.log" 2>&1
  else
    sol="$work/$name/best/solution.json"
    [ -f "$sol" ] || timeout $((secs + 180)) "${kernelarc[@]}" optimize "$p" --device cuda --time-limit "$secs" \
      --budget 24 --fresh-memory --out "$work/$name" > "$out/$name.optimize.log" 2>&1
  fi
  [ -f "$sol" ] && cp "$sol" "$out/$name.solution.json"
  for i in $(seq 1 "${REPEAT:-1}"); do
    [ -f "$sol" ] || break
    row=$name; [ "$i" -gt 1 ] && row="$name~r$i"
    caches=$(mktemp -d /tmp/agree-caches.XXXX)
    KERNELARC_HOME=$caches/kernelarc timeout 240 "${kernelarc[@]}" eval "$p" "$sol" --device cuda --timing device --json \
      > "$out/$row.eval.json" 2> "$out/$row.eval.err"
    TORCHINDUCTOR_CACHE_DIR=$caches/inductor TRITON_CACHE_DIR=$caches/triton timeout 300 bash "$official" "$p" "$sol" \
      > "$out/$row.official.jsonl" 2> "$out/$row.official.err"
  done
  echo "$name: $(( $(date +%s) - start )) s, solution: $([ -f "$sol" ] && echo "yes (${which:-campaign})" || echo no)"
done
