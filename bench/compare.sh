#!/bin/bash
# Per-core and two-core throughput of aten and llm, and in the same run the
# Python Hypothesis + PyTorch loop (bench/python_loop.py) doing the same job,
# with the ratios. Usage: bench/compare.sh [BUILD_DIR] [CASES]
set -euo pipefail
BUILD=${1:-build}
CASES=${2:-3000}
HERE=$(cd "$(dirname "$0")" && pwd)
T="$BUILD/bench/throughput"
rate() { awk '{for (i = 1; i < NF; ++i) if ($(i + 1) == "cases/s") print $i}'; }
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
py=$(/usr/bin/python3 "$HERE/python_loop.py" "$CASES")
echo "$py"
py_rate=$(echo "$py" | rate)
for target in aten llm; do
  one=$("$T" "$CASES" in-process "$target")
  iso=$("$T" "$CASES" jobs=1 "$target")
  two=$("$T" "$CASES" jobs=2 "$target")
  printf '%s\n%s\n%s\n' "$one" "$iso" "$two"
  r1=$(echo "$one" | rate); ri=$(echo "$iso" | rate); r2=$(echo "$two" | rate)
  awk -v t="$target" -v r1="$r1" -v ri="$ri" -v r2="$r2" -v py="$py_rate" 'BEGIN {
    printf "%s: in-process / python %.1fx; jobs=2 / jobs=1 %.2fx; jobs=2 / python %.1fx\n", t, r1 / py, r2 / ri, r2 / py }'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
