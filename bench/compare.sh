#!/bin/bash
# Per-core and two-core throughput of aten and llm, and in the same run the
# Python Hypothesis + PyTorch loop (bench/python_loop.py) doing the same job,
# with the ratios. ROUNDS rounds, each running every configuration once in
# turn, each round in a shuffled order, so that a busy minute of a noisy
# machine falls on all of them; the summary takes each configuration's
# median over the rounds.
# Usage: bench/compare.sh [BUILD_DIR] [CASES] [ROUNDS]
set -euo pipefail
BUILD=${1:-build}
CASES=${2:-3000}
ROUNDS=${3:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
T="$BUILD/bench/throughput"
rate() { awk '{for (i = 1; i < NF; ++i) if ($(i + 1) == "cases/s") print $i}'; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
declare -A rates
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $ROUNDS round(s)"
# Round r runs the configurations in a shuffled order, the same for a
# given r on every run (awk's srand(r)), so that no configuration always
# runs right after the same one.
configs=(py aten.in-process aten.jobs=1 aten.jobs=2 llm.in-process llm.jobs=1 llm.jobs=2)
for round in $(seq "$ROUNDS"); do
  mapfile -t order < <(printf '%s\n' "${configs[@]}" |
    awk -v r="$round" 'BEGIN {srand(r)} {printf "%.17f %s\n", rand(), $0}' | sort -n | cut -d' ' -f2)
  for config in "${order[@]}"; do
    if [ "$config" = py ]; then
      line=$(/usr/bin/python3 "$HERE/python_loop.py" "$CASES")
    else
      line=$("$T" "$CASES" "${config#*.}" "${config%%.*}")
    fi
    echo "$line"
    rates[$config]+="$(echo "$line" | rate) "
  done
done
med() { echo "${rates[$1]}" | tr ' ' '\n' | grep . | median; }
py_rate=$(med py)
for target in aten llm; do
  r1=$(med "$target.in-process"); ri=$(med "$target.jobs=1"); r2=$(med "$target.jobs=2")
  awk -v t="$target" -v r1="$r1" -v ri="$ri" -v r2="$r2" -v py="$py_rate" -v n="$ROUNDS" 'BEGIN {
    printf "%s (median of %d): in-process %.0f, jobs=1 %.0f, jobs=2 %.0f, python %.0f cases/s; ", t, n, r1, ri, r2, py
    printf "in-process / python %.1fx; jobs=2 / jobs=1 %.2fx; jobs=2 / python %.1fx\n", r1 / py, r2 / ri, r2 / py }'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
