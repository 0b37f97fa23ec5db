#include "backends/llm/sdpa_custom_spec.h"

#include <functional>

#include "backends/llm/contract_spec.h"

namespace sdpa::llm {
namespace {

// "a REL b" at every size to try (contract_spec's points); the detail of a
// broken rule names a size where it fails.
RuleOutcome size_rule(const Case& c, const std::string& rule, const std::string& text, const SymExpr& a,
                      const SymExpr& b, const std::function<bool(int64_t, int64_t)>& holds) {
  for (const auto& at : sizes_to_try(c.symbols)) {
    const int64_t x = a.eval(at), y = b.eval(at);
    if (holds(x, y)) continue;
    std::string where;
    for (const auto& [name, value] : at) where += (where.empty() ? " at " : ", ") + name + " = " + std::to_string(value);
    return {rule, false, text + " fails" + where + " (" + std::to_string(x) + " vs " + std::to_string(y) + ")"};
  }
  return {rule, true, text + (c.symbols.empty() ? "" : " at every size in range")};
}

bool ge(int64_t a, int64_t b) { return a >= b; }
bool le(int64_t a, int64_t b) { return a <= b; }
bool eq(int64_t a, int64_t b) { return a == b; }

}  // namespace

std::vector<RuleOutcome> sdpa_custom_spec(const Case& c, bool use_attention_mask) {
  std::vector<RuleOutcome> out;
  out.push_back(size_rule(c, "query-length", "Lq " + c.q_len.str() + " >= 1", c.q_len, SymExpr(1), ge));
  if (!use_attention_mask) {
    // custom_sdpa runs causal at input_pos[0] whatever mask the module had.
    out.push_back({"causal-slice", c.is_causal,
                   c.is_causal ? "the mask is the causal rows at start_pos"
                               : "the module's own mask (" +
                                     std::string(c.mask ? pattern_name(c.mask->pattern) : "none") +
                                     "), which the swap drops for causal at start_pos"});
    out.push_back(size_rule(c, "cache-bounds",
                            "start_pos " + c.start_pos.str() + " + Lq " + c.q_len.str() + " <= Lkv " + c.kv_len.str(),
                            c.start_pos + c.q_len, c.kv_len, le));
    return out;
  }
  // The mask passed as is: a causal case's is the buffer's bool rows.
  const DType dtype = c.mask ? c.mask->dtype : DType::b8;
  const SymShape shape = c.mask ? c.mask->shape : SymShape{c.q_len, c.kv_len};
  out.push_back({"mask-rank", shape.size() == 2, "mask " + shape_str(shape)});
  out.push_back({"mask-dtype", dtype == DType::f32, std::string("mask dtype ") + dtype_name(dtype)});
  const size_t r = shape.size();
  if (r < 2) {
    out.push_back({"mask-shape", false, "mask " + shape_str(shape) + " has no rows and columns"});
    return out;
  }
  RuleOutcome rows = size_rule(c, "mask-shape", "mask rows " + shape[r - 2].str() + " == Lq " + c.q_len.str(),
                               shape[r - 2], c.q_len, eq);
  out.push_back(rows.passed ? size_rule(c, "mask-shape", "mask columns " + shape[r - 1].str() + " == Lkv " + c.kv_len.str(),
                                        shape[r - 1], c.kv_len, eq)
                            : rows);
  return out;
}

}  // namespace sdpa::llm
