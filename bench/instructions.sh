#!/bin/bash
# Instructions per case, and where they go: the throughput bench run in
# process under callgrind, counting only inside the campaign
# (run_target_campaign: no start-up, no LibTorch registration), each
# function's own instructions put in a class by bench/function_classes.awk.
# Unlike this machine's timings, the count repeats to within 0.1% from run
# to run, so a cut too small to time shows here; it weighs an instruction
# the same wherever it runs (a cache miss costs nothing: bench/time_split.sh
# gives the time).
# Usage: bench/instructions.sh [BUILD_DIR] [TARGET] [CASES]
# (valgrind, which scripts/install-deps.sh installs; about a minute per
# 1,000 aten cases.)
set -euo pipefail
BUILD=${1:-build}
TARGET=${2:-aten}
CASES=${3:-1000}
HERE=$(dirname "$0")
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
valgrind --tool=callgrind --toggle-collect='sdpa::run_target_campaign*' --callgrind-out-file="$OUT/cg" \
  "$BUILD/bench/throughput" "$CASES" in-process "$TARGET" >"$OUT/log" 2>&1
# callgrind_annotate's lines "  N (p%)  FILE:FUNCTION [LIBRARY]" as
# N<TAB>FILE<TAB>FUNCTION<TAB>LIBRARY (the totals line left out).
callgrind_annotate --threshold=100 "$OUT/cg" |
  awk '/PROGRAM TOTALS/ { next }
       /^ *[0-9,]+ \( *[0-9.]+%\)  / {
         n = $1; gsub(",", "", n)
         line = $0
         sub(/^ *[0-9,]+ \( *[0-9.]+%\)  /, "", line)
         obj = ""
         if (match(line, / \[[^]]*\]$/)) {
           obj = substr(line, RSTART + 2, RLENGTH - 3)
           line = substr(line, 1, RSTART - 1)
         }
         colon = match(line, /:[^:]/)
         printf "%s\t%s\t%s\t%s\n", n, substr(line, 1, colon - 1), substr(line, colon + 1), obj
       }' >"$OUT/counts"
awk -v cases="$CASES" -v target="$TARGET" -v unit="instructions" -f "$HERE/function_classes.awk" "$OUT/counts"
