#include "harness/case/case_validate.h"

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "harness/io/json_reader.h"
#include "harness/ir/tensor.h"

namespace sdpa {
namespace {

constexpr int64_t kMaxSpecialCount = 64;  // special elements or rows of one tensor

class Validator {
 public:
  Validator(const Case& c, const SizeLimits& l, std::string path)
      : c_(c), limits_(l), path_(std::move(path)) {}

  void run() {
    check_symbols();
    check_static_fields();
    const std::vector<Assignment> runs = c_.runs();
    for (size_t i = 0; i < runs.size(); ++i) {
      const Assignment& a = runs[i];
      std::string at = c_.runtime.empty() ? "" : "at runtime[" + std::to_string(i) + "] ";
      check_no_overflow(a, at);
      check_run(a, at);
    }
    // The guards evaluate sizes at the export hints too: none may overflow there.
    if (std::optional<Assignment> hints = hint_assignment()) check_no_overflow(*hints, "at the export hints ");
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw InputError(path_ + "." + field + ": " + why);
  }

  void check_size_symbols(const SymExpr& e, const std::string& field) {
    for (const auto& s : e.symbols()) {
      if (!c_.symbols.count(s)) fail(field, "symbol '" + s + "' is not declared in symbols");
      used_.insert(s);
    }
  }

  void check_symbols() {
    for (size_t i = 0; i < c_.batch.size(); ++i)
      check_size_symbols(c_.batch[i], "batch[" + std::to_string(i) + "]");
    check_size_symbols(c_.q_len, "q_len");
    check_size_symbols(c_.kv_len, "kv_len");
    check_size_symbols(c_.start_pos, "start_pos");
    if (c_.mask)
      for (size_t i = 0; i < c_.mask->shape.size(); ++i)
        check_size_symbols(c_.mask->shape[i], "mask.shape[" + std::to_string(i) + "]");
    for (const auto& [name, s] : c_.symbols) {
      std::string f = "symbols." + name;
      if (!used_.count(name)) fail(f, "declared but no size uses it");
      if (s.min < 0 || s.max < s.min)
        fail(f, "expected 0 <= min <= max, got min " + std::to_string(s.min) + ", max " +
                    std::to_string(s.max));
      if (s.max > limits_.max_dim)
        fail(f + ".max", "exceeds the size limit " + std::to_string(limits_.max_dim));
      if (s.hint && (*s.hint < s.min || *s.hint > s.max))
        fail(f + ".hint", "expected a value in [" + std::to_string(s.min) + ", " +
                              std::to_string(s.max) + "], got " + std::to_string(*s.hint));
    }
    if (!c_.symbols.empty() && c_.runtime.empty())
      fail("runtime", "expected at least one runtime size assignment when the case has symbols");
    if (c_.symbols.empty() && !c_.runtime.empty())
      for (const auto& a : c_.runtime)
        if (!a.empty()) fail("runtime", "gives sizes but the case declares no symbols");
    if (c_.runtime.size() > static_cast<size_t>(limits_.max_runs))
      fail("runtime", "has " + std::to_string(c_.runtime.size()) + " entries, the limit is " +
                          std::to_string(limits_.max_runs));
    for (size_t i = 0; i < c_.runtime.size(); ++i) {
      std::string f = "runtime[" + std::to_string(i) + "]";
      for (const auto& [name, v] : c_.runtime[i]) {
        auto it = c_.symbols.find(name);
        if (it == c_.symbols.end()) fail(f + "." + name, "not a declared symbol");
        if (v < it->second.min || v > it->second.max)
          fail(f + "." + name, "value " + std::to_string(v) + " is outside the symbol's range [" +
                                   std::to_string(it->second.min) + ", " +
                                   std::to_string(it->second.max) + "]");
      }
      for (const auto& [name, s] : c_.symbols)
        if (!c_.runtime[i].count(name)) fail(f, "gives no value for symbol '" + name + "'");
    }
  }

  void check_positive(int64_t v, const std::string& field) {
    if (v < 1) fail(field, "expected a positive integer, got " + std::to_string(v));
    if (v > limits_.max_dim)
      fail(field, std::to_string(v) + " exceeds the size limit " + std::to_string(limits_.max_dim));
  }

  void check_static_fields() {
    if (c_.batch.size() > static_cast<size_t>(limits_.max_batch_rank))
      fail("batch", "has " + std::to_string(c_.batch.size()) + " dims, the limit is " +
                        std::to_string(limits_.max_batch_rank));
    check_positive(c_.q_heads, "q_heads");
    check_positive(c_.kv_heads, "kv_heads");
    check_positive(c_.head_dim, "head_dim");
    check_positive(c_.value_dim, "value_dim");
    const int64_t hq = c_.q_heads, hkv = c_.kv_heads;
    if (hq != hkv) {
      if (c_.enable_gqa && hq % hkv != 0)
        fail("kv_heads", "with enable_gqa, q_heads (" + std::to_string(hq) +
                             ") must be a multiple of kv_heads (" + std::to_string(hkv) + ")");
      if (!c_.enable_gqa && hkv != 1)
        fail("kv_heads", "without enable_gqa, aten needs kv_heads == q_heads or kv_heads == 1 "
                         "(broadcast), got q_heads " + std::to_string(hq) + ", kv_heads " +
                             std::to_string(hkv));
    }
    if (!(c_.dropout_p >= 0.0 && c_.dropout_p < 1.0))
      fail("dropout_p", "expected a number in [0, 1), got " + std::to_string(c_.dropout_p));
    if (c_.scale && !std::isfinite(*c_.scale)) fail("scale", "expected a finite number or null");
    if (c_.causal_alignment != CausalAlignment::top_left && !c_.is_causal)
      fail("causal_alignment", std::string(alignment_name(c_.causal_alignment)) +
                                   " is the alignment of a causal mask: it needs is_causal=true");
    if (!(c_.data.magnitude > 0 && std::isfinite(c_.data.magnitude)))
      fail("data.magnitude", "expected a positive finite number");
    if (c_.data.special) check_special(*c_.data.special);
    if (c_.mask) check_mask_static(*c_.mask);
  }

  void check_special(const SpecialData& s) {
    const std::string& t = s.tensor;
    if (t != "q" && t != "k" && t != "v" && t != "mask")
      fail("data.special.tensor", "expected one of q, k, v, mask, got \"" + t + "\"");
    if (t == "mask" && (!c_.mask || c_.mask->dtype == DType::b8))
      fail("data.special.tensor", "\"mask\" needs an additive (float) mask: a bool mask holds no NaN or inf");
    if (s.count < 1 || s.count > kMaxSpecialCount)
      fail("data.special.count", "expected an integer in [1, " + std::to_string(kMaxSpecialCount) + "], got " +
                                     std::to_string(s.count));
  }

  void check_mask_static(const MaskSpec& m) {
    if (c_.is_causal)
      fail("mask", "aten rejects a mask together with is_causal=true (\"Explicit attn_mask "
                   "should not be set when is_causal=True\")");
    if (m.dtype != DType::b8 && m.dtype != DType::f32 && m.dtype != c_.dtype &&
        is_floating(c_.dtype))
      fail("mask.dtype", std::string("aten takes a bool, f32 or query-dtype mask; got ") +
                             dtype_name(m.dtype) + " with query " + dtype_name(c_.dtype));
    size_t rank = c_.batch.size() + 3;
    if (m.shape.empty() || m.shape.size() > rank)
      fail("mask.shape", "expected 1 to " + std::to_string(rank) + " sizes, got " +
                             std::to_string(m.shape.size()));
    using P = MaskPattern;
    bool probability = m.pattern == P::random || m.pattern == P::full_row || m.pattern == P::block_sparse;
    if (probability && !(m.param >= 0.0 && m.param <= 1.0))
      fail("mask.param", "the keep probability must be in [0, 1]");
    const bool whole = m.param >= 0.0 && m.param == std::floor(m.param) && m.param <= limits_.max_dim;
    if (m.pattern == P::left_padding && !whole)
      fail("mask.param", "the number of dropped leading keys must be an integer in [0, " +
                             std::to_string(limits_.max_dim) + "]");
    if (m.pattern == P::per_batch_padding && !whole)
      fail("mask.param", "the most padded keys of a batch element must be an integer in [0, " +
                             std::to_string(limits_.max_dim) + "]");
    if (m.pattern == P::block_sparse) {
      check_positive(m.block_rows, "mask.block_rows");
      check_positive(m.block_keys, "mask.block_keys");
    } else if (m.block_rows != 0 || m.block_keys != 0) {
      fail("mask.block_rows", "only a block-sparse mask has blocks");
    }
    // Bounded by the size limit before the mask builder casts them to int64.
    if (m.pattern == MaskPattern::window && !(whole && m.param >= 1.0))
      fail("mask.param", "the window width must be an integer in [1, " + std::to_string(limits_.max_dim) + "]");
    if (m.pattern == MaskPattern::padding && !whole)
      fail("mask.param", "the number of kept keys must be an integer in [0, " + std::to_string(limits_.max_dim) + "]");
  }

  static int64_t product(const std::vector<int64_t>& s) {
    double n = 1;
    for (int64_t d : s) n *= static_cast<double>(d);
    return n > 9e18 ? INT64_MAX : static_cast<int64_t>(n);
  }

  // The shape is named with the count: the field is only where to start
  // looking (a huge batch shows in the query's count as well).
  void check_elements(const std::vector<int64_t>& shape, const std::string& what,
                      const std::string& at) {
    int64_t n = product(shape);
    if (n > limits_.max_tensor_elements)
      fail(what, at + shape_str(shape) + " has " +
                     (n == INT64_MAX ? std::string("more than 9e18") : std::to_string(n)) +
                     " elements, the limit is " + std::to_string(limits_.max_tensor_elements));
  }

  std::optional<Assignment> hint_assignment() const {
    if (c_.symbols.empty()) return std::nullopt;
    Assignment a;
    for (const auto& [name, s] : c_.symbols) {
      if (!s.hint) return std::nullopt;
      a[name] = *s.hint;
    }
    return a;
  }

  // Each size on its own, before any shape is computed from them, so that
  // an overflowing expression is named with its field, not wrapped into a
  // small value that passes the limits.
  void check_no_overflow(const Assignment& a, const std::string& at) {
    auto eval = [&](const SymExpr& e, const std::string& field) {
      try {
        e.eval(a);
      } catch (const std::overflow_error& err) {
        fail(field, at + err.what());
      }
    };
    for (size_t i = 0; i < c_.batch.size(); ++i) eval(c_.batch[i], "batch[" + std::to_string(i) + "]");
    eval(c_.q_len, "q_len");
    eval(c_.kv_len, "kv_len");
    eval(c_.start_pos, "start_pos");
    if (c_.mask)
      for (size_t i = 0; i < c_.mask->shape.size(); ++i)
        eval(c_.mask->shape[i], "mask.shape[" + std::to_string(i) + "]");
  }

  void check_run(const Assignment& a, const std::string& at) {
    ConcreteSizes s = concrete_sizes(c_, a);
    // Zero-size dims are calls aten takes (an empty output, or zeros for Lkv 0).
    for (size_t i = 0; i < s.batch.size(); ++i)
      if (s.batch[i] < 0) fail("batch[" + std::to_string(i) + "]", at + "must be >= 0");
    if (s.Lq < 0) fail("q_len", at + "must be >= 0, got " + std::to_string(s.Lq));
    if (s.Lkv < 0) fail("kv_len", at + "must be >= 0, got " + std::to_string(s.Lkv));
    if (s.start_pos < 0) fail("start_pos", at + "must be >= 0");
    // Each size named with its field and value, as the static fields are.
    auto check_dim = [&](int64_t d, const std::string& field) {
      if (d > limits_.max_dim)
        fail(field, at + std::to_string(d) + " exceeds the size limit " + std::to_string(limits_.max_dim));
    };
    for (size_t i = 0; i < s.batch.size(); ++i) check_dim(s.batch[i], "batch[" + std::to_string(i) + "]");
    check_dim(s.Lq, "q_len");
    check_dim(s.Lkv, "kv_len");
    check_dim(s.start_pos, "start_pos");
    check_elements(eval_shape(query_shape(c_), a), "q_len", at + "the query ");
    check_elements(eval_shape(key_shape(c_), a), "kv_len", at + "the key ");
    check_elements(eval_shape(value_shape(c_), a), "kv_len", at + "the value ");
    std::vector<int64_t> scores = eval_shape(score_shape(c_), a);
    check_elements(scores, "kv_len", at + "the score tensor ");
    if (!c_.mask) return;
    const auto& ms = s.mask_shape;
    for (size_t i = 0; i < ms.size(); ++i) {
      int64_t target = scores[scores.size() - ms.size() + i];
      if (ms[i] != 1 && ms[i] != target)
        fail("mask.shape[" + std::to_string(i) + "]",
             at + "size " + std::to_string(ms[i]) + " does not broadcast to " +
                 std::to_string(target) + " (mask must broadcast to [batch..., Hq, Lq, Lkv] = " +
                 shape_str(score_shape(c_)) + ")");
    }
  }

  const Case& c_;
  const SizeLimits& limits_;
  std::string path_;
  std::set<std::string> used_;
};

}  // namespace

void validate_case(const Case& c, const SizeLimits& limits, const std::string& path) {
  Validator(c, limits, path).run();
}

}  // namespace sdpa
