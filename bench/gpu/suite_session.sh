#!/usr/bin/env bash
# Bench tasks of bench/suites/h200 on a lent GPU machine across several device calls.
#
#   bench/gpu/suite_session.sh RESULTS_DIR WAIT_S BENCH_OPTIONS -- TASK...
#
# (SUITE=dir picks another suite; PYTHON=interpreter another Python; GPUS=n splits the tasks over
# the machine's first n GPUs: task i goes to GPU i mod n, each GPU benches its share in order, one
# `kernelarc bench` at a time, into the same RESULTS_DIR. The benches share the host's CPUs, not a
# GPU: the method in docs/benchmarks.md says so wherever it was used.)
# A call starts the benches in their own session (setsid), one `kernelarc bench` per task in the
# order given, all into RESULTS_DIR (results are incremental: a task already complete there with the
# same options is kept); it then follows the log for at most WAIT_S seconds and packs RESULTS_DIR
# into $OUT/results.tgz. Make each call self-contained: give it only the tasks that finish within
# WAIT_S. A second call while benches still run is harmful: the device tool copies the working tree
# and the carried folders again on every call, and on 2026-11-30 that replaced the running benches'
# results folder with the empty carried one and broke an import mid-run (docs/benchmarks.md, run 4).
# Between calls, unpack results.tgz into RESULTS_DIR here (a git-ignored folder of the repo, e.g.
# .gpu_results/h200) and carry it with the next call, which then skips the tasks already complete.
# Expects the missing Python packages as wheels in .whl/ (docs/benchmarks.md says which).
set -u
results=$1; wait_s=$2; shift 2
bench_opts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do bench_opts+=("$1"); shift; done
shift
tasks=("$@")
mkdir -p "$results"
log=$results/session.log
pidfile=${TMPDIR:-/tmp}/kernelarc-suite.pid  # per machine, never carried: a pid means nothing on another one
out=${OUT:-/tmp/out}
suite=${SUITE:-bench/suites/h200}
py=${PYTHON:-python3}

gpus=${GPUS:-1}
running() { [ -s $pidfile ] && while read -r pid; do kill -0 "$pid" 2>/dev/null && return 0; done <$pidfile; return 1; }

if ! running; then
  PYTHON=$py . bench/gpu/install_wheels.sh
  cards=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sort | uniq -c | xargs)
  echo "== $(date -u +%FT%TZ) start on ${cards:-no GPU}; $gpus bench(es) at once" >>"$log"
  export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
  : >$pidfile
  for ((g = 0; g < gpus; g++)); do
    share=()
    for ((i = g; i < ${#tasks[@]}; i += gpus)); do share+=("${tasks[i]}"); done
    [ ${#share[@]} -gt 0 ] || continue
    CUDA_VISIBLE_DEVICES=$g KERNELARC_HOME=/tmp/kernelarc-home-$g setsid bash -c '
      for t in "$@"; do
        echo "== $(date -u +%FT%TZ) gpu '"$g"' task $t"
        '"$py"' -c "from kernelarc.cli.main import main; main()" bench '"$suite"' --tasks "$t" --out "'"$results"'" '"${bench_opts[*]}"'
      done
      echo "== $(date -u +%FT%TZ) gpu '"$g"' all done"' _ "${share[@]}" >>"$log" 2>&1 </dev/null &
    echo $! >>$pidfile
  done
fi

deadline=$((SECONDS + wait_s))
while running && [ $SECONDS -lt $deadline ]; do sleep 5; done
grep -E "^== |: (complete|failed|running)|Error|error" "$log" | tail -40
mkdir -p "$out"
tar czf "$out/results.tgz" -C "$(dirname "$results")" "$(basename "$results")"
