#!/bin/bash
# Where a case's time goes: perf samples of the throughput bench in process
# at 1,000 and 1,000 + CASES cases, the first run's subtracted from the
# second's function by function (start-up and the first cases cancel), each
# function put in a class by bench/function_classes.awk. Samples are
# cpu-clock ticks: the shares carry this machine's noise (a class of 5%
# moves by about a point between runs), unlike bench/instructions.sh.
# Usage: bench/time_split.sh [BUILD_DIR] [TARGET] [CASES]
# (perf, which scripts/install-deps.sh installs as linux-perf; it needs
# kernel.perf_event_paranoid <= 2.)
set -euo pipefail
BUILD=${1:-build}
TARGET=${2:-aten}
CASES=${3:-24000}
HERE=$(dirname "$0")
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
samples() {  # cases, output file
  perf record -q -F 2999 -o "$OUT/perf.data" "$BUILD/bench/throughput" "$1" in-process "$TARGET" >/dev/null 2>&1
  # "SAMPLES<TAB>LIBRARY<TAB>[.] FUNCTION" as SAMPLES<TAB><TAB>FUNCTION<TAB>LIBRARY.
  perf report -i "$OUT/perf.data" --no-children --sort dso,sym -F sample,dso,sym -t $'\t' --stdio 2>/dev/null |
    awk -F'\t' '/^#/ || NF < 3 { next }
                { n = $1; lib = $2; fn = $3
                  gsub(/^ +| +$/, "", n); gsub(/^ +| +$/, "", lib); sub(/^\[.\] /, "", fn)
                  printf "%s\t\t%s\t%s\n", n, fn, lib }' >"$2"
}
samples 1000 "$OUT/short"
samples $((1000 + CASES)) "$OUT/long"
awk -v cases="$CASES" -v target="$TARGET" -v scale="$(awk 'BEGIN { print 1e6 / 2999 }')" \
  -v unit="microseconds (perf samples at 2999 Hz)" -v minus="$OUT/short" \
  -f "$HERE/function_classes.awk" "$OUT/short" "$OUT/long"
