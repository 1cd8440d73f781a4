#!/usr/bin/env bash
# `kernelarc eval --device cuda --json` of candidate files against their tasks, one after another, each
# under `timeout`: OUT/<candidate stem>.json (the evaluation) and .err (stderr), and one line per pair.
#
#   bash bench/gpu/evals.sh OUT SECONDS TASK=CANDIDATE...
#
# Needs the set-up of bench/gpu/README.md (bwrap on PATH, the wheels).
set -uo pipefail
out=$1; secs=$2; shift 2
mkdir -p "$out"
source bench/gpu/install_wheels.sh
for pair in "$@"; do
  task=${pair%%=*}; cand=${pair#*=}; name=$(basename "${cand%.py}")
  start=$(date +%s)
  timeout "$secs" python3 -c "from kernelarc.cli.main import main; main()" eval "$task" "$cand" --device cuda --json \
    > "$out/$name.json" 2> "$out/$name.err"
  rc=$?
  echo "$name: exit $rc in $(( $(date +%s) - start )) s: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['verdict'], d['status'], d.get('speedup'), d.get('latency_ms'), d.get('incumbent_ms'), str(d.get('reason'))[:160])" "$out/$name.json" 2>/dev/null || tail -c 300 "$out/$name.err")"
done
