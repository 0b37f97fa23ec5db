#include "oracles/oracle_test_support.h"

#include <random>

#include "harness/ir/kernel_set.h"

namespace sdpa::test {

Case make_case(int64_t Hq, int64_t Hkv, int64_t Lq, int64_t Lkv, int64_t E, int64_t Ev) {
  Case c;
  c.dtype = DType::f64;
  c.q_heads = Hq;
  c.kv_heads = Hkv;
  c.q_len = Lq;
  c.kv_len = Lkv;
  c.head_dim = E;
  c.value_dim = Ev;
  c.data.seed = 7;
  return c;
}

MaskSpec mask_spec(DType dtype, std::vector<int64_t> shape, MaskPattern pattern, double param,
                   MaskFill fill) {
  MaskSpec m;
  m.dtype = dtype;
  m.shape.assign(shape.begin(), shape.end());
  m.pattern = pattern;
  m.param = param;
  m.fill = fill;
  return m;
}

double out_at(const Golden& g, const std::vector<int64_t>& index) {
  int64_t flat = 0;
  for (size_t d = 0; d < index.size(); ++d) flat = flat * g.out.shape[d] + index[d];
  return g.out.data.at(flat);
}

namespace {

class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed) {}
  int64_t in(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <typename T>
  T one_of(std::initializer_list<T> options) {
    return options.begin()[in(0, static_cast<int64_t>(options.size()) - 1)];
  }

 private:
  std::mt19937_64 rng_;
};

void draw_heads(Case& c, Draw& d) {
  switch (d.in(0, 2)) {
    case 0:
      c.q_heads = c.kv_heads = d.in(1, 4);
      break;  // one kv head per query head
    case 1:   // GQA
      c.kv_heads = d.in(1, 3);
      c.q_heads = c.kv_heads * d.in(1, 3);
      c.enable_gqa = true;
      break;
    default:
      c.q_heads = d.in(2, 4), c.kv_heads = 1;  // broadcast without enable_gqa
  }
}

MaskSpec draw_mask(const Case& c, Draw& d, const SymShape& scores) {
  MaskSpec m;
  m.dtype = d.one_of({DType::b8, DType::f32, c.dtype});
  // A trailing slice of the score shape, each dim either kept or 1.
  size_t rank = static_cast<size_t>(d.in(1, static_cast<int64_t>(scores.size())));
  for (size_t i = scores.size() - rank; i < scores.size(); ++i)
    m.shape.push_back(d.chance(0.7) ? scores[i] : SymExpr(1));
  m.pattern = d.one_of({MaskPattern::random, MaskPattern::causal, MaskPattern::window,
                        MaskPattern::padding, MaskPattern::full_row, MaskPattern::keep_all});
  switch (m.pattern) {
    case MaskPattern::random:
    case MaskPattern::full_row:
      m.param = d.one_of({0.0, 0.3, 0.7, 1.0});
      break;
    case MaskPattern::window:
      m.param = static_cast<double>(d.in(1, 4));
      break;
    case MaskPattern::padding:
      m.param = static_cast<double>(d.in(0, 6));
      break;
    default:
      break;
  }
  m.fill = d.one_of({MaskFill::neg_inf, MaskFill::min, MaskFill::neg_1e4});
  return m;
}

}  // namespace

Case varied_case(uint64_t i, const VariedOptions& options) {
  Draw d(0x5d9a0000ULL + i);
  Case c;
  c.dtype = d.one_of({DType::f32, DType::f16, DType::bf16, DType::f64});
  c.layout = options.bshd && d.chance(0.4) ? Layout::bshd : Layout::bhsd;
  for (int64_t r = d.in(0, 2); r > 0; --r) c.batch.push_back(d.in(1, 3));
  draw_heads(c, d);
  c.q_len = d.in(1, 9);
  c.head_dim = d.in(1, 16);
  c.value_dim = d.in(1, 16);
  if (options.symbols && d.chance(0.2)) {
    c.kv_len = SymExpr::symbol("s0");
    c.symbols["s0"] = SymbolInfo{4, 1, 12};
    c.runtime = {{{"s0", d.in(1, 12)}}, {{"s0", d.in(1, 12)}}};
  } else {
    c.kv_len = d.in(1, 9);
  }
  if (d.chance(0.3))
    c.is_causal = true;
  else if (d.chance(0.7))
    c.mask = draw_mask(c, d, score_shape(c));
  if (d.chance(0.25)) c.dropout_p = d.one_of({0.1, 0.5});
  if (d.chance(0.5)) c.scale = d.one_of({0.0, -0.3, 0.05, 2.0});
  c.data.distribution = d.one_of(
      {Distribution::normal, Distribution::uniform, Distribution::integers, Distribution::large});
  c.data.magnitude = d.one_of({0.5, 1.0, 3.0, 5000.0});  // 5000: f16 overflows to inf
  c.data.seed = i;
  return c;
}

Tensor reference_sdpa(const Case& c, const CaseTensors& t, Numerics numerics) {
  const KernelSet kernels = make_reference_kernels("test", numerics);
  Node node;
  node.name = "sdpa";
  node.op = "aten.scaled_dot_product_attention.default";
  node.outputs = {ValueInfo{c.dtype, output_shape(c), std::nullopt}};
  const RunContext ctx{{}, c.data.seed};
  KernelArgs a(node, ctx);
  Value mask = None{};
  if (t.mask) mask = &*t.mask;
  a.args = {&t.q, &t.k, &t.v, mask, c.dropout_p, c.is_causal};
  a.kwargs = {{"enable_gqa", c.enable_gqa}};
  if (c.scale) a.kwargs.push_back({"scale", *c.scale});
  return (*kernels.find(node.op))(a).at(0);
}

}  // namespace sdpa::test
