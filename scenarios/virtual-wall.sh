#!/usr/bin/env bash
# Virtual time against wall time for every scenario: seeds 0..N-1 (default 10) of our consumer,
# one at a time, each in its own process as `cargo sim explore` runs them (start-up included);
# virtual time is up to the run's last recorded event, which `run --virtual-end` prints.
# VIRTUAL_WALL_HISTORY=1 reads it off the printed history instead (`run --history`, as the
# script did before that flag; the history costs the printing and the grep). Numbers in
# BENCHMARKS.md.
#   [SIM=path/to/sim] [VIRTUAL_WALL_HISTORY=1] scenarios/virtual-wall.sh [N]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
n="${1:-10}"
# SIM=path measures another build of the CLI (e.g. an older commit's, copied aside).
if [ -n "${SIM:-}" ]; then
  sim="$SIM"
else
  cargo sim list > /dev/null   # builds the release CLI once
  sim=target/sim/release/sim
fi
printf "%-28s %10s %8s %12s\n" scenario virtual_s wall_s virtual/wall
total_virtual_ms=0
total_wall_ms=0
for scenario in $("$sim" list | awk '{print $1}'); do
  virtual_ms=0
  wall_ms=0
  for seed in $(seq 0 $((n - 1))); do
    started_ns=$(date +%s%N)
    if [ -n "${VIRTUAL_WALL_HISTORY:-}" ]; then
      last_ms=$("$sim" run "$scenario" --seed "$seed" --subject consumer --history \
        | grep -oE '^ *[0-9]+ms' | tail -n 1 | tr -dc 0-9)
    else
      last_ms=$("$sim" run "$scenario" --seed "$seed" --subject consumer --virtual-end \
        | sed -n 's/^virtual end: \([0-9]*\)ms$/\1/p')
    fi
    ended_ns=$(date +%s%N)
    virtual_ms=$((virtual_ms + last_ms))
    wall_ms=$((wall_ms + (ended_ns - started_ns) / 1000000))
  done
  total_virtual_ms=$((total_virtual_ms + virtual_ms))
  total_wall_ms=$((total_wall_ms + wall_ms))
  awk -v s="$scenario" -v v="$virtual_ms" -v w="$wall_ms" \
    'BEGIN { printf "%-28s %10.1f %8.2f %12.1f\n", s, v / 1000, w / 1000, v / w }'
done
awk -v v="$total_virtual_ms" -v w="$total_wall_ms" \
  'BEGIN { printf "%-28s %10.1f %8.2f %12.1f\n", "total", v / 1000, w / 1000, v / w }'
