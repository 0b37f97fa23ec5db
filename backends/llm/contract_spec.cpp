#include "backends/llm/contract_spec.h"

#include <functional>
#include <sstream>

namespace sdpa::llm {
namespace {

std::string sizes_str(const Assignment& at) {
  std::string s;
  for (const auto& [name, value] : at) s += (s.empty() ? "" : ", ") + name + " = " + std::to_string(value);
  return s;
}

// "a REL b" checked at every size to try; the detail names the first size
// where it fails, or says that it holds everywhere.
class SizeRules {
 public:
  explicit SizeRules(const Case& c) : c_(c), points_(sizes_to_try(c.symbols)) {}

  using Relation = std::function<bool(int64_t, int64_t)>;

  RuleOutcome check(const std::string& rule, const std::string& text, const SymExpr& a,
                    const SymExpr& b, const Relation& holds) const {
    for (const auto& at : points_) {
      int64_t x = a.eval(at), y = b.eval(at);
      if (holds(x, y)) continue;
      std::string where = c_.symbols.empty() ? "" : " at " + sizes_str(at);
      return {rule, false, text + " fails" + where + " (" + std::to_string(x) + " vs " + std::to_string(y) + ")"};
    }
    return {rule, true, text + (c_.symbols.empty() ? "" : " at every size in range")};
  }

 private:
  const Case& c_;
  std::vector<Assignment> points_;
};

bool le(int64_t a, int64_t b) { return a <= b; }
bool eq(int64_t a, int64_t b) { return a == b; }

RuleOutcome heads_rule(const Case& c) {
  const bool ok = c.q_heads == c.kv_heads || c.kv_heads == 1 ||
                  (c.enable_gqa && c.kv_heads > 0 && c.q_heads % c.kv_heads == 0);
  return {"heads", ok,
          "Hq " + std::to_string(c.q_heads) + ", Hkv " + std::to_string(c.kv_heads) +
              (c.enable_gqa ? ", enable_gqa" : "")};
}

// The mask squeezes to exactly [Lq, Lkv]: rank >= 2, every leading dim 1,
// then Lq and Lkv, at every size in range.
RuleOutcome mask_shape_rule(const Case& c, const SizeRules& sizes) {
  const SymShape& m = c.mask->shape;
  const std::string rule = "mask-shape", shape = "mask " + shape_str(m);
  if (m.size() < 2) return {rule, false, shape + " has rank " + std::to_string(m.size()) + " < 2"};
  for (size_t d = 0; d + 2 < m.size(); ++d) {
    RuleOutcome r = sizes.check(rule, shape + ": dim " + std::to_string(d) + " == 1", m[d], SymExpr(1), eq);
    if (!r.passed) return r;
  }
  RuleOutcome r = sizes.check(rule, shape + ": rows == Lq " + c.q_len.str(), m[m.size() - 2], c.q_len, eq);
  if (!r.passed) return r;
  r = sizes.check(rule, shape + ": columns == Lkv " + c.kv_len.str(), m.back(), c.kv_len, eq);
  if (!r.passed) return r;
  return {rule, true, shape + " squeezes to [Lq, Lkv]"};
}

bool is_kernel_dtype(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

// The dtypes custom_sdpa runs: float32 only before 411a01e1b9 (§1.10).
bool runs_dtype(DType t, const EtRevision& rev) { return rev.float_only ? t == DType::f32 : is_kernel_dtype(t); }

}  // namespace

std::vector<Assignment> sizes_to_try(const std::map<std::string, SymbolInfo>& symbols, int64_t max_points) {
  int64_t points = 1;
  for (const auto& [name, s] : symbols) {
    points *= s.max - s.min + 1;
    if (points > max_points) break;
  }
  // Odometer over either every value of each symbol or its two ends.
  const bool every = points <= max_points;
  std::vector<Assignment> out{{}};
  for (const auto& [name, s] : symbols) {
    std::vector<int64_t> values;
    if (every)
      for (int64_t v = s.min; v <= s.max; ++v) values.push_back(v);
    else
      values = s.min == s.max ? std::vector<int64_t>{s.min} : std::vector<int64_t>{s.min, s.max};
    std::vector<Assignment> next;
    for (const auto& at : out)
      for (int64_t v : values) {
        Assignment a = at;
        a[name] = v;
        next.push_back(std::move(a));
      }
    out = std::move(next);
  }
  return out;
}

std::vector<RuleOutcome> contract_spec(const Case& c, bool assume_causal_mask, const EtRevision& rev) {
  std::vector<RuleOutcome> out;
  const SizeRules sizes(c);
  const size_t rank = c.batch.size() + 3;  // [batch..., H, L, D]
  out.push_back({"rank", rank == 4, "q, k, v of rank " + std::to_string(rank)});
  out.push_back({"dtype", runs_dtype(c.dtype, rev), std::string("dtype ") + dtype_name(c.dtype)});
  out.push_back(heads_rule(c));
  out.push_back({"head-dims", c.head_dim == c.value_dim,
                 "E " + std::to_string(c.head_dim) + ", Ev " + std::to_string(c.value_dim)});
  std::ostringstream p;
  p << "dropout_p " << c.dropout_p;
  out.push_back({"dropout", c.dropout_p == 0.0, p.str()});
  // custom_sdpa computes qSlice = (Lq - 1) / min(q_split_size, Lq) + 1: SIGFPE at Lq = 0.
  out.push_back(sizes.check("query-length", "Lq " + c.q_len.str() + " >= 1", c.q_len, SymExpr(1),
                            [](int64_t a, int64_t b) { return a >= b; }));

  const bool has_mask = c.mask.has_value() && !assume_causal_mask;
  const bool causal = c.is_causal || assume_causal_mask;
  if (causal) {
    // custom_sdpa aligns causal rows top-left at start_pos 0 and reads
    // start_pos + Lq keys: Lq <= Lkv.
    out.push_back(sizes.check("causal-lengths", "Lq " + c.q_len.str() + " <= Lkv " + c.kv_len.str(),
                              c.q_len, c.kv_len, le));
    // The causal -inf is written before the scale multiplies it.
    std::ostringstream s;
    s << "scale " << c.effective_scale();
    out.push_back({"causal-scale", c.effective_scale() > 0.0, s.str()});
  } else if (!has_mask) {
    // Unmasked, custom_sdpa attends only the first start_pos + Lq = Lq keys.
    out.push_back(sizes.check("unmasked-lengths", "Lq " + c.q_len.str() + " == Lkv " + c.kv_len.str(),
                              c.q_len, c.kv_len, eq));
  }
  if (has_mask) {
    out.push_back(mask_shape_rule(c, sizes));
    const DType m = c.mask->dtype;
    out.push_back({"mask-dtype", m == DType::b8 || is_kernel_dtype(m), std::string("mask dtype ") + dtype_name(m)});
  }
  return out;
}

}  // namespace sdpa::llm
