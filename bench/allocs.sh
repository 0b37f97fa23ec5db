#!/bin/bash
# C++ allocations and bytes allocated per case, in process: the throughput
# bench run at two case counts with bench/alloc_count.cpp preloaded, the
# difference divided by the difference in cases (start-up cancels). The
# counts repeat to within a few hundred in millions from run to run, so a
# change of overhead too small for this machine's timings shows here.
# Usage: bench/allocs.sh [BUILD_DIR] [TARGET] [CASES]
set -euo pipefail
BUILD=${1:-build}
TARGET=${2:-aten}
CASES=${3:-4000}
count() {
  LD_PRELOAD="$BUILD/bench/liballoc_count.so" "$BUILD/bench/throughput" "$1" in-process "$TARGET" 2>&1 >/dev/null |
    awk '/^alloc_count:/ {print $2, $4}'
}
read -r n1 b1 < <(count 1000)
read -r n2 b2 < <(count $((1000 + CASES)))
awk -v n1="$n1" -v n2="$n2" -v b1="$b1" -v b2="$b2" -v c="$CASES" -v t="$TARGET" \
  'BEGIN {printf "%s: %.0f allocations and %.0f bytes per case (%d cases past the first 1000)\n", t, (n2 - n1) / c, (b2 - b1) / c, c}'
