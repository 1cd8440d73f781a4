#!/usr/bin/env bash
# Campaigns one after the other on a lent GPU machine, each as issue 16's sample runs them
# (`kernelarc optimize TASK --agents 4 --budget 100 --time-limit T --device cuda`), packed for the trip back.
#
#   bash bench/gpu/campaigns.sh NAME TASK_FILE=T...
#
# Each campaign's log, summary.json and campaign.sqlite go under /tmp/o/TASK; the whole folder is packed
# into $OUT/NAME.tgz (the device tool brings back only a few files). A campaign gets T + 60 s of wall before
# it is stopped (start-up and the finals' overrun), never past WALL_S seconds (default 580) from the start, so
# that the pack is made inside the device tool's limit: a campaign with less than T seconds left is skipped. Before the first one: the CPUs the host gives this
# process and those an idle side process was started on (guard/timing_cpus.py), in /tmp/o/affinity.txt.
# Set-up as bench/gpu/README.md: bwrap on PATH, the wheels of .whl installed.
set -u
name=$1; shift
mkdir -p /tmp/kbw && cp -r .gpu/bwrap/* /tmp/kbw/ && chmod -R a+rx /tmp/kbw && export PATH=/tmp/kbw:$PATH
source bench/gpu/install_wheels.sh
o=/tmp/o; mkdir -p $o
{ date -u +%FT%TZ; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $o/host.txt
python3 - > $o/affinity.txt 2>&1 <<'PY'
import os, time
from kernelarc.guard import sandbox, timing_cpus
from kernelarc.guard.sides import SideProcess
side = SideProcess("cuda:0", sandbox.SandboxPolicy(), sandbox.probe() is None)
time.sleep(2)
allowed = open(f"/proc/{side.proc.pid}/status").read().split("Cpus_allowed_list:")[1].split()[0]
print("judge", sorted(os.sched_getaffinity(0)), "reserved", sorted(timing_cpus.reserved()), "side", allowed)
side.close()
PY
end=$((SECONDS + ${WALL_S:-580}))
for pair in "$@"; do
  task=${pair%=*}; limit=${pair#*=}; t=$(basename "$task" .py)
  left=$((end - SECONDS - 10)); cap=$((limit + 60 < left ? limit + 60 : left))
  if [ $left -lt $limit ]; then echo "== skipped $t T=$limit: ${left} s left" >> $o/host.txt; continue; fi
  mkdir -p $o/$t
  echo "== $(date -u +%FT%TZ) $t T=$limit" >> $o/host.txt
  timeout $cap python3 -m kernelarc optimize "$task" --agents 4 --budget 100 --time-limit "$limit" \
    --device cuda --out /tmp/runs/$t > $o/$t/log.txt 2>&1
  echo "rc=$?" >> $o/$t/log.txt
  cp /tmp/runs/$t/summary.json /tmp/runs/$t/campaign.sqlite $o/$t/ 2>/dev/null
done
echo "== $(date -u +%FT%TZ) done" >> $o/host.txt
tar czf "$OUT/$name.tgz" -C /tmp o
cat $o/host.txt $o/affinity.txt
for d in $o/*/; do tail -3 "$d/log.txt"; done
