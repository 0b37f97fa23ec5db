#!/bin/bash
# Instructions per case, and where they go: the throughput bench run in
# process under callgrind, counting only inside the campaign
# (run_target_campaign: no start-up, no LibTorch registration), each
# function's own instructions put in one class by its name and library.
# Unlike this machine's timings, the count repeats to within 0.1% from run
# to run, so a cut too small to time shows here; it weighs an instruction
# the same wherever it runs (a cache miss costs nothing).
# Usage: bench/instructions.sh [BUILD_DIR] [TARGET] [CASES]
# (valgrind: scripts/install-deps.sh installs it; about a minute per
# 1,000 aten cases.)
set -euo pipefail
BUILD=${1:-build}
TARGET=${2:-aten}
CASES=${3:-1000}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
valgrind --tool=callgrind --toggle-collect='sdpa::run_target_campaign*' --callgrind-out-file="$OUT/cg" \
  "$BUILD/bench/throughput" "$CASES" in-process "$TARGET" >"$OUT/log" 2>&1
callgrind_annotate --threshold=100 "$OUT/cg" >"$OUT/self"
# Each line of the self list: "  N (p%)  FILE:FUNCTION [OBJECT]".
awk -v cases="$CASES" -v target="$TARGET" '
function classify(file, fn, obj,    name) {
  gsub(/\(anonymous namespace\)/, "anon", fn)
  # A std::function wrapper is named by the lambda it calls.
  if (fn ~ /^std::_Function_handler</ && index(fn, "), ") > 0) fn = substr(fn, index(fn, "), ") + 3)
  name = fn
  if (index(name, "(") > 0) name = substr(name, 1, index(name, "(") - 1)
  if (obj ~ /libtorch/ && name ~ /^0x/) return "LibTorch, code without symbols (its vectorized kernels, mostly)"
  if (file ~ /\/math\/|ieee754/ || obj ~ /libm\.|libsleef|libblas|libopenblas|liblapack/) return "arithmetic: libm, Sleef, BLAS"
  if (obj ~ /libtorch|libc10|libdnnl|libgomp/) return "LibTorch and c10, named: dispatch, TensorIterator, tensor set-up"
  if (name ~ /rc::|(^|::)gen_|[Dd]raw|case_gen/) return "case generation (RapidCheck and the generators)"
  if (name ~ /operator new|operator delete|tcmalloc|malloc|free|_M_fill_assign|memset|_M_realloc|_M_create|_M_default_append|~/) return "allocation, zero-filling and destruction"
  if (name ~ /memcpy|memmove|memcmp|strlen|basic_string|string::|_Rb_tree|uninit_copy|std::map|operator=|to_aten|from_aten|permute|swap_heads/) return "copying, strings and maps"
  if (name ~ /sdpa::ref::|AttentionCall|row_facts|softmax|golden|round_to|ulp|ompensated|two_|exp_no_underflow|error_bound|compare_|structural|max_abs|key_norms|CounterStream|dropout_keep|mask_keeps|make_input|make_mask|causal_keeps|matmul|FlashAttention|StandardSdpa|SplitK|cmsis|xnn|Xnnpack|quantize|requantize/) return "arithmetic: kernels, oracles, case data, comparison"
  if (name ~ /Interpreter|SymExpr|eval_shape|Graph|verify_graph|KernelSet|KernelArgs|resolve|check_meta|Node|concrete_sizes|Rewriter|Validator|wrap|sdpa_entry/) return "graph, interpreter and shapes"
  return "other: campaign, checker, statistics"
}
/PROGRAM TOTALS/ { gsub(",", "", $1); total = $1; next }
/^ *[0-9,]+ \( *[0-9.]+%\)  / {
  n = $1; gsub(",", "", n); n += 0
  line = $0
  sub(/^ *[0-9,]+ \( *[0-9.]+%\)  /, "", line)
  obj = ""
  if (match(line, / \[[^]]*\]$/)) { obj = substr(line, RSTART + 2, RLENGTH - 3); line = substr(line, 1, RSTART - 1) }
  colon = match(line, /:[^:]/)
  file = substr(line, 1, colon - 1); fn = substr(line, colon + 1)
  c = classify(file, fn, obj)
  share[c] += n; listed += n
  if (c ~ /^other/ && n > top_other) { top_other = n; top_name = fn }
}
END {
  printf "%s: %.0f instructions per case (%d cases, in process)\n", target, total / cases, cases
  for (c in share) printf "  %5.1f%%  %s\n", 100 * share[c] / total, c | "sort -rn"
  close("sort -rn")
  printf "  %5.1f%%  below the listing threshold\n", 100 * (total - listed) / total
  if (top_name != "") printf "  largest in other: %.1f%% %s\n", 100 * top_other / total, substr(top_name, 1, 100)
}' "$OUT/self"
