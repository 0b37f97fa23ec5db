#!/bin/bash
# One core to two, measured so that a noisy machine's slow minutes cancel:
# TRIPLES times, the target in process, with --jobs 1 and with --jobs 2,
# back to back in a shuffled order (a fixed shuffle per triple), and the
# ratios taken within each triple; the summary is the median of those
# ratios. A ratio of medians taken over minutes (compare.sh) mixes runs
# made at different speeds of the machine.
# Usage: bench/scaling.sh [BUILD_DIR] [TARGET] [CASES] [TRIPLES]
set -euo pipefail
BUILD=${1:-build}
TARGET=${2:-aten}
CASES=${3:-8000}
TRIPLES=${4:-9}
T="$BUILD/bench/throughput"
rate() { awk '{for (i = 1; i < NF; ++i) if ($(i + 1) == "cases/s") print $i}'; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $TARGET, $CASES cases, $TRIPLES triple(s)"
over_one=() over_in=()
for k in $(seq "$TRIPLES"); do
  declare -A r=()
  mapfile -t order < <(printf '%s\n' in-process jobs=1 jobs=2 |
    awk -v k="$k" 'BEGIN {srand(k)} {printf "%.17f %s\n", rand(), $0}' | sort -n | cut -d' ' -f2)
  for config in "${order[@]}"; do r[$config]=$("$T" "$CASES" "$config" "$TARGET" | rate); done
  one=$(awk -v a="${r[jobs=2]}" -v b="${r[jobs=1]}" 'BEGIN {printf "%.3f", a / b}')
  in=$(awk -v a="${r[jobs=2]}" -v b="${r[in-process]}" 'BEGIN {printf "%.3f", a / b}')
  echo "triple $k (${order[*]}): in-process ${r[in-process]}, jobs=1 ${r[jobs=1]}, jobs=2 ${r[jobs=2]}; jobs=2 / jobs=1 ${one}x, jobs=2 / in-process ${in}x"
  over_one+=("$one") over_in+=("$in")
done
echo "$TARGET (median of $TRIPLES triples): jobs=2 / jobs=1 $(printf '%s\n' "${over_one[@]}" | median)x," \
  "jobs=2 / in-process $(printf '%s\n' "${over_in[@]}" | median)x"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
