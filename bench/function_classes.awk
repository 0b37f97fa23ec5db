# Puts each function's own cost in one class, by its name and library, and
# prints each class's share: what bench/instructions.sh (callgrind's
# instructions) and bench/time_split.sh (perf's samples) report.
# Input: COUNT<TAB>FILE<TAB>FUNCTION<TAB>LIBRARY lines; the lines of the file
# named by -v minus=FILE are subtracted (a shorter run, to cancel start-up).
# -v cases=N divides the net total, -v scale=X multiplies it (default 1),
# -v unit=WORDS names what the result counts.
BEGIN {
  FS = "\t"
  if (scale == "") scale = 1
  # By name, tried in order after the rules by library in classify().
  by_name("case generation (RapidCheck and the generators)", "rc::|(^|::)gen_|[Dd]raw|case_gen")
  by_name("allocation, zero-filling and destruction",
          "operator new|operator delete|tcmalloc|tc_|malloc|free|_M_fill_assign|memset|_M_realloc|" \
          "_M_create|_M_default_append|~")
  by_name("copying, strings and maps",
          "memcpy|memmove|memcmp|strlen|basic_string|string::|_Rb_tree|uninit_copy|std::map|operator=|" \
          "to_aten|from_aten|permute|swap_heads|codes|int8_result")
  by_name("arithmetic: kernels, oracles, case data, comparison",
          "sdpa::ref::|AttentionCall|row_facts|softmax|golden|round_to|round_all_to|ulp|ompensated|two_|exp_no_underflow|" \
          "error_bound|compare_|structural|max_abs|key_norms|CounterStream|dropout_keep|mask_keeps|make_input|" \
          "make_mask|causal_keeps|matmul|FlashAttention|custom_sdpa_kernel|StandardSdpa|SplitK|cmsis|xnn|" \
          "Xnnpack|quantize|requantize|_stage|out_of_bound")
  by_name("graph, interpreter and shapes",
          "Interpreter|SymExpr|eval_shape|Graph|verify_graph|KernelSet|KernelArgs|resolve|check_meta|Node|" \
          "concrete_sizes|Rewriter|Validator|wrap|sdpa_entry")
}

function by_name(class, pattern) {
  rules++
  rule_class[rules] = class
  rule_pattern[rules] = pattern
}

function classify(file, fn, obj,    name, i) {
  gsub(/\(anonymous namespace\)/, "anon", fn)
  # A std::function wrapper is named by the lambda it calls.
  if (fn ~ /^std::_Function_handler</ && index(fn, "), ") > 0) fn = substr(fn, index(fn, "), ") + 3)
  name = fn
  if (index(name, "(") > 0) name = substr(name, 1, index(name, "(") - 1)
  if (obj ~ /libtorch/ && name ~ /^0x/) return "LibTorch, code without symbols (its vectorized kernels, mostly)"
  if (file ~ /\/math\/|ieee754/ || obj ~ /libm\.|libsleef|libblas|libopenblas|liblapack/)
    return "arithmetic: libm, Sleef, BLAS"
  if (obj ~ /libtorch|libc10|libdnnl|libgomp/) return "LibTorch and c10, named: dispatch, TensorIterator, tensor set-up"
  if (obj ~ /kernel|ld-linux|vdso/) return "operating system, dynamic linker"
  for (i = 1; i <= rules; i++)
    if (name ~ rule_pattern[i]) return rule_class[i]
  return "other: campaign, checker, statistics, exceptions"
}

{
  n = $1 + 0
  if (FILENAME == minus) n = -n
  c = classify($2, $3, $4)
  share[c] += n
  total += n
  if (c ~ /^other/) other[$3] += n
}

END {
  printf "%s: %.0f %s per case\n", target, total * scale / cases, unit
  for (c in share) printf "  %5.1f%%  %s\n", 100 * share[c] / total, c | "sort -rn"
  close("sort -rn")
  for (f in other) if (other[f] > top) { top = other[f]; top_name = f }
  if (top_name != "") printf "  the largest in other: %.1f%% %s\n", 100 * top / total, substr(top_name, 1, 100)
}
