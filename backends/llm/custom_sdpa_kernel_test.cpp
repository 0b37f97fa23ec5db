#include "backends/llm/custom_sdpa_kernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "harness/ir/interpreter.h"

namespace sdpa::llm {
namespace {

Tensor tensor(DType t, Shape s, std::vector<double> v) {
  Tensor x(t, std::move(s));
  x.data = std::move(v);
  return x;
}

// A [B, S, H, D] tensor with element (s, h, d) = f(s, h, d), B = 1.
Tensor bshd(DType t, int64_t S, int64_t H, int64_t D, double (*f)(int64_t, int64_t, int64_t)) {
  Tensor x(t, {1, S, H, D});
  for (int64_t s = 0; s < S; ++s)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < D; ++d) x.data[(s * H + h) * D + d] = round_to(t, f(s, h, d));
  return x;
}

SymShape sym(const Shape& s) {
  SymShape out;
  for (int64_t d : s) out.push_back(d);
  return out;
}

struct Call {
  Tensor q, k, v;
  std::optional<Tensor> mask;
  int64_t start_pos = 0;
  double dropout = 0.0;
  bool causal = false;
  std::optional<double> scale;
  bool by_keyword = false;  // start_pos and after passed as keyword arguments
};

Tensor run(const Call& c, Numerics n = Numerics::emulated, KernelFault fault = {}, int64_t threads = 1,
           EtRevision rev = {}) {
  Graph g;
  std::map<std::string, Tensor> in{{"q", c.q}, {"k", c.k}, {"v", c.v}};
  ValueRef q = g.placeholder("q", {c.q.dtype, sym(c.q.shape)});
  ValueRef k = g.placeholder("k", {c.k.dtype, sym(c.k.shape)});
  ValueRef v = g.placeholder("v", {c.v.dtype, sym(c.v.shape)});
  Arg mask = None{};
  if (c.mask) {
    mask = g.placeholder("mask", {c.mask->dtype, sym(c.mask->shape)});
    in["mask"] = *c.mask;
  }
  const Arg scale = c.scale ? Arg(*c.scale) : Arg(None{});
  std::vector<Arg> args = {q, k, v, c.start_pos, mask, c.dropout, c.causal, scale};
  std::vector<std::pair<std::string, Arg>> kwargs;
  if (c.by_keyword) {
    args.resize(3);
    kwargs = {{"scale", scale}, {"is_causal", c.causal}, {"attn_mask", mask}, {"start_pos", c.start_pos},
              {"drpout_p", c.dropout}};
  }
  g.outputs = {g.call(kCustomSdpaOp, args, kwargs, {{c.q.dtype, sym(c.q.shape)}})};
  KernelSet ks("t");
  ks.add(kCustomSdpaOp, custom_sdpa_kernel(n, fault, threads, rev));
  return interpret(g, ks, in, {}).outputs[0];
}

// Attention of query row `qrow` (E = 1, H = 1) over keys `keys`, exactly.
double attend(double qrow, const std::vector<double>& k, const std::vector<double>& v,
              const std::vector<int>& keys, double scale) {
  double num = 0, den = 0;
  for (int j : keys) {
    double w = std::exp(qrow * k[j] * scale);
    num += w * v[j];
    den += w;
  }
  return num / den;
}

double qf(int64_t s, int64_t, int64_t) { return 0.3 + 0.2 * s; }
double kf(int64_t s, int64_t, int64_t) { return -0.5 + 0.4 * s; }
double vf(int64_t s, int64_t, int64_t) { return 1.0 + s; }

TEST(CustomSdpa, WithoutAMaskKeysPastStartPosPlusLqAreCut) {
  Call c{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 5, 1, 1, kf), bshd(DType::f32, 5, 1, 1, vf)};
  Tensor out = run(c, Numerics::exact);
  std::vector<double> k{-0.5, -0.1, 0.3, 0.7, 1.1}, v{1, 2, 3, 4, 5};
  EXPECT_NEAR(out.data[0], attend(0.3, k, v, {0, 1}, 1.0), 1e-6);  // inputs are f32-rounded  // not keys 2..4
  EXPECT_NEAR(out.data[1], attend(0.5, k, v, {0, 1}, 1.0), 1e-6);  // inputs are f32-rounded
  EXPECT_GT(std::fabs(out.data[0] - attend(0.3, k, v, {0, 1, 2, 3, 4}, 1.0)), 0.1);
}

// has_attn_mask = has_value() && numel() > 0: a [0, Lkv] mask adds nothing,
// yet its presence turns truncation off, so all 5 keys are attended where
// no mask keeps 2 (WithoutAMaskKeysPastStartPosPlusLqAreCut).
// The schema's parameters after value are positional-or-keyword: passed by
// keyword, in any order, they mean what they mean by position.
TEST(CustomSdpa, StartPosMaskCausalAndScaleByKeywordMeanWhatTheyMeanByPosition) {
  Call masked{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 4, 1, 1, kf), bshd(DType::f32, 4, 1, 1, vf)};
  masked.mask = tensor(DType::f32, {2, 4}, {0, -INFINITY, 0, 0, 0, 0, -INFINITY, 0});
  masked.scale = 0.5;
  Call causal{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 5, 1, 1, kf), bshd(DType::f32, 5, 1, 1, vf)};
  causal.start_pos = 2;
  causal.causal = true;
  for (Call c : {masked, causal}) {
    const Tensor by_position = run(c, Numerics::exact);
    c.by_keyword = true;
    EXPECT_EQ(run(c, Numerics::exact).data, by_position.data);
  }
  Call cut = causal;  // start_pos matters: 0 cuts more keys
  cut.start_pos = 0;
  cut.by_keyword = true;
  EXPECT_NE(run(cut, Numerics::exact).data, run(causal, Numerics::exact).data);
}

TEST(CustomSdpa, AnEmptyMaskAttendsEveryKey) {
  Call c{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 5, 1, 1, kf), bshd(DType::f32, 5, 1, 1, vf),
         Tensor(DType::f32, {0, 5})};
  Tensor out = run(c, Numerics::exact);
  // softmax(q_i * k) . v over the 5 keys, from the f32-rounded inputs.
  EXPECT_DOUBLE_EQ(out.data[0], 3.238515153490163);
  EXPECT_DOUBLE_EQ(out.data[1], 3.393227972576076);
  c.mask.reset();
  Tensor cut = run(c, Numerics::exact);
  EXPECT_DOUBLE_EQ(cut.data[0], 1.5299640528410259);
  EXPECT_DOUBLE_EQ(cut.data[1], 1.5498339971280637);
  c.mask = Tensor(DType::f32, {0, 5});
  Tensor f32 = run(c);
  EXPECT_NEAR(f32.data[0], 3.238515153490163, 1e-6);
  EXPECT_NEAR(f32.data[1], 3.393227972576076, 1e-6);
}

TEST(CustomSdpa, CausalKeepsKeysUpToStartPosPlusRow) {
  Call c{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 4, 1, 1, kf), bshd(DType::f32, 4, 1, 1, vf)};
  c.causal = true;
  c.start_pos = 2;
  Tensor out = run(c, Numerics::exact);
  std::vector<double> k{-0.5, -0.1, 0.3, 0.7}, v{1, 2, 3, 4};
  EXPECT_NEAR(out.data[0], attend(0.3, k, v, {0, 1, 2}, 1.0), 1e-6);  // inputs are f32-rounded
  EXPECT_NEAR(out.data[1], attend(0.5, k, v, {0, 1, 2, 3}, 1.0), 1e-6);  // inputs are f32-rounded
  c.start_pos = 0;  // top-left: row 0 sees key 0 only
  EXPECT_NEAR(run(c, Numerics::exact).data[0], 1.0, 1e-12);
}

TEST(CustomSdpa, GqaMapsQueryHeadToHeadOverGroupSize) {
  // Hq 4, Hkv 2, one key: each output head equals the v of its kv head.
  Call c{bshd(DType::f32, 1, 4, 1, qf), bshd(DType::f32, 1, 2, 1, kf),
         bshd(DType::f32, 1, 2, 1, [](int64_t, int64_t h, int64_t) { return 10.0 + h; })};
  Tensor out = run(c);
  EXPECT_EQ(out.data, (std::vector<double>{10, 10, 11, 11}));
}

TEST(CustomSdpa, MaskContractMessages) {
  Tensor q = bshd(DType::f32, 3, 1, 1, qf), k = bshd(DType::f32, 3, 1, 1, kf), v = bshd(DType::f32, 3, 1, 1, vf);
  auto message = [&](Call c) -> std::pair<KernelError::Kind, std::string> {
    try {
      run(c);
    } catch (const KernelError& e) {
      std::string what = e.what();
      return {e.kind, what.substr(what.find("): ") + 3)};
    }
    return {KernelError::Kind::unsupported, "no error"};
  };
  Call rank3{q, k, v, Tensor(DType::f32, {1, 3, 3})};
  EXPECT_EQ(message(rank3), std::make_pair(KernelError::Kind::recoverable,
                                           std::string("Attention mask must be a 2D tensor; Invalid arguments")));
  Call half{q, k, v, Tensor(DType::f16, {3, 3})};
  EXPECT_EQ(message(half).second, "Attention mask must be a Float tensor; Invalid arguments");
  Call broadcast_row{q, k, v, Tensor(DType::f32, {1, 3})};
  EXPECT_EQ(message(broadcast_row),
            std::make_pair(KernelError::Kind::fatal, std::string("attn_mask shape mismatchattn_mask.size(0)=1 qSize=3")));
  Call with_causal{q, k, v, Tensor(DType::f32, {3, 3})};
  with_causal.causal = true;
  EXPECT_EQ(message(with_causal).second, "attn_mask and is_causal cannot be set at the same time");
  Call beyond_cache{bshd(DType::f32, 4, 1, 1, qf), k, v};
  EXPECT_EQ(message(beyond_cache),
            std::make_pair(KernelError::Kind::fatal, std::string("num_keys_for_causal_attention must be <= kvSize")));
  Call head_dims{q, k, Tensor(DType::f32, {1, 3, 1, 2})};
  EXPECT_EQ(message(head_dims).second,
            "scaled_dot_product_attention_flash_attention: Q/K/V should have the same head size; Invalid arguments");
}

// The kind and text of the error a call raises, or "no error".
std::pair<KernelError::Kind, std::string> error_of(const Call& c, EtRevision rev = {}) {
  try {
    run(c, Numerics::emulated, {}, 1, rev);
  } catch (const KernelError& e) {
    std::string what = e.what();
    return {e.kind, what.substr(what.find("): ") + 3)};
  }
  return {KernelError::Kind::unsupported, "no error"};
}

TEST(CustomSdpa, HeadCountChecksAreFatalWithTheUpstreamTexts) {
  auto one = [](int64_t, int64_t, int64_t) { return 1.0; };
  Call more_kv{bshd(DType::f32, 1, 1, 1, one), bshd(DType::f32, 1, 2, 1, one), bshd(DType::f32, 1, 2, 1, one)};
  EXPECT_EQ(error_of(more_kv),
            std::make_pair(KernelError::Kind::fatal,
                           std::string("FlashAttention does not support num kv heads > num query heads.Got num "
                                       "query heads=1 num key heads:2")));
  Call not_divisible{bshd(DType::f32, 1, 3, 1, one), bshd(DType::f32, 1, 2, 1, one),
                     bshd(DType::f32, 1, 2, 1, one)};
  EXPECT_EQ(error_of(not_divisible),
            std::make_pair(KernelError::Kind::fatal,
                           std::string("FlashAttention: num qyery heads must be divisible by num kv heads but got "
                                       "num query heads=3 and num kv heads=2")));
}

// The kernel called directly, as the runtime would: the pass never emits
// these dtypes (the Meta kernel asserts first).
std::pair<KernelError::Kind, std::string> direct_error(const Tensor& q, const Tensor& k, const Tensor& v,
                                                       EtRevision rev = {}) {
  Node node;
  node.name = "custom_sdpa";
  node.op = kCustomSdpaOp;
  node.outputs = {{q.dtype, sym(q.shape)}};
  RunContext ctx;
  KernelArgs a(node, ctx);
  a.args = {&q, &k, &v, int64_t{0}, None{}, 0.0, false, None{}};
  try {
    custom_sdpa_kernel(Numerics::emulated, {}, 1, rev)(a);
  } catch (const KernelError& e) {
    return {e.kind, e.what()};
  }
  return {KernelError::Kind::unsupported, "no error"};
}

TEST(CustomSdpa, DtypeChecksAreRecoverableWithTheUpstreamTexts) {
  auto one = [](int64_t, int64_t, int64_t) { return 1.0; };
  Tensor f64 = bshd(DType::f64, 1, 1, 1, one), f32 = bshd(DType::f32, 1, 1, 1, one),
         bf16 = bshd(DType::bf16, 1, 1, 1, one);
  EXPECT_EQ(direct_error(f64, f64, f64),
            std::make_pair(KernelError::Kind::recoverable,
                           std::string("Query must be Float, Half, BFloat16, or Char type; Invalid arguments")));
  EXPECT_EQ(direct_error(f32, bf16, f32),
            std::make_pair(KernelError::Kind::recoverable,
                           std::string("Key and Value must have the same data type as Query; Invalid arguments")));
  EXPECT_EQ(direct_error(f32, f32, bf16).second,
            "Key and Value must have the same data type as Query; Invalid arguments");
  EXPECT_EQ(direct_error(f32, f32, f32).second, "no error");
}

// Lq query rows over 3 keys, row 32's keys all masked: the first row of
// the second query block (32 rows a block).
Call row_32_masked(int64_t Lq) {
  Call c{bshd(DType::f32, Lq, 1, 1, qf), bshd(DType::f32, 3, 1, 1, kf), bshd(DType::f32, 3, 1, 1, vf)};
  Tensor mask(DType::f32, {Lq, 3});
  for (int64_t j = 0; j < 3; ++j) mask.data[32 * 3 + j] = -INFINITY;
  c.mask = mask;
  return c;
}

EtRevision revision(const std::string& name) {
  for (const auto& [value, rev] : et_revisions())
    if (value == name) return rev;
  ADD_FAILURE() << "no revision " << name;
  return {};
}

// Before 411a01e1b9 (2026-07-08) the kernel ran Float and Char queries only.
TEST(CustomSdpaRevision, BeforeJuly2026TheKernelTakesFloatQueriesOnly) {
  auto one = [](int64_t, int64_t, int64_t) { return 1.0; };
  for (DType t : {DType::bf16, DType::f16}) {
    Tensor x = bshd(t, 1, 1, 1, one);
    EXPECT_EQ(direct_error(x, x, x, revision("2026-07-07")),
              std::make_pair(KernelError::Kind::recoverable, std::string("Query must be Float type; Invalid arguments")))
        << dtype_name(t);
    EXPECT_EQ(direct_error(x, x, x, revision("main")).second, "no error") << dtype_name(t);
  }
  Tensor f64 = bshd(DType::f64, 1, 1, 1, one), f32 = bshd(DType::f32, 1, 1, 1, one);
  EXPECT_EQ(direct_error(f64, f64, f64, revision("2026-07-07")).second, "Query must be Float type; Invalid arguments");
  EXPECT_EQ(direct_error(f32, f32, f32, revision("2025-07-01")).second, "no error");
  Tensor i8 = bshd(DType::i8, 1, 1, 1, one);
  EXPECT_EQ(direct_error(i8, i8, i8, revision("2025-07-01")).second, "Query must be Float type; Invalid arguments");
  EXPECT_NE(direct_error(i8, i8, i8, revision("2026-07-07")).second, "Query must be Float type; Invalid arguments");
}

// Before 9905026101 (2025-07-02) the mask had q's dtype, checked under the
// rank check's text; since then it is Float whatever q is.
TEST(CustomSdpaRevision, BeforeJuly2025TheMaskHasTheQuerysDtypeUnderTheRankChecksText) {
  Tensor q = bshd(DType::f32, 2, 1, 1, qf), k = bshd(DType::f32, 2, 1, 1, kf), v = bshd(DType::f32, 2, 1, 1, vf);
  Call half{q, k, v, tensor(DType::f16, {2, 2}, {0, 0, 0, 0})};
  EXPECT_EQ(error_of(half, revision("2025-07-01")),
            std::make_pair(KernelError::Kind::recoverable,
                           std::string("Attention mask must be a 2D tensor; Invalid arguments")));
  EXPECT_EQ(error_of(half, revision("2026-07-07")).second, "Attention mask must be a Float tensor; Invalid arguments");
  Call single{q, k, v, tensor(DType::f32, {2, 2}, {0, 0, 0, 0})};
  EXPECT_EQ(error_of(single, revision("2025-07-01")).second, "no error");
  EXPECT_EQ(run(single, Numerics::emulated, {}, 1, revision("2025-07-01")).data, run(single).data);
}

// Before f3e8972de6 (2025-04-25) no kv block was skipped: a block where
// the row's running max is still -inf goes through exp(-inf - -inf). One
// query row over 520 keys, the first block's 512 masked: main attends the
// last 8 keys, the earlier tree gives NaN. With a finite first block both
// trees agree.
TEST(CustomSdpaRevision, BeforeApril2025AFirstBlockWithNoKeptKeyTurnsTheRowNan) {
  auto ramp = [](int64_t s, int64_t, int64_t) { return 0.001 * static_cast<double>(s % 7); };
  Call c{bshd(DType::f32, 1, 1, 1, qf), bshd(DType::f32, 520, 1, 1, ramp), bshd(DType::f32, 520, 1, 1, ramp)};
  Tensor mask(DType::f32, {1, 520});
  for (int64_t j = 0; j < 512; ++j) mask.data[j] = -INFINITY;
  c.mask = mask;
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    EXPECT_TRUE(std::isfinite(run(c, n).data[0]));
    EXPECT_TRUE(std::isnan(run(c, n, {}, 1, revision("2025-04-24")).data[0]));
    EXPECT_FALSE(std::isnan(run(c, n, {}, 1, revision("2025-07-01")).data[0]));
  }
  c.mask->data[0] = 0.0;  // one kept key in the first block
  EXPECT_EQ(run(c, Numerics::emulated, {}, 1, revision("2025-04-24")).data, run(c).data);
}

// The same tree, Lq = 33 on one thread: row 32's keys are all masked. Main
// skips its block and keeps row 0's sum (0 out, the test below); the
// earlier tree gives NaN, and a third query block's row 0 (Lq = 65: rows
// 32 and 64 share row index 0 of their blocks) inherits that NaN sum.
TEST(CustomSdpaRevision, BeforeApril2025AFullyMaskedRowIsNanAndItsSumCarriesOn) {
  const Call c = row_32_masked(65);
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    const Tensor now = run(c, n), before = run(c, n, {}, 1, revision("2025-04-24"));
    EXPECT_EQ(now.data[32], 0.0);
    EXPECT_TRUE(std::isfinite(now.data[64]));
    EXPECT_TRUE(std::isnan(before.data[32]));
    EXPECT_TRUE(std::isnan(before.data[64]));
    EXPECT_EQ(before.data[0], now.data[0]);
  }
}

TEST(CustomSdpa, FullyMaskedRowIsNan) {
  Tensor q = bshd(DType::f32, 2, 1, 1, qf), k = bshd(DType::f32, 3, 1, 1, kf), v = bshd(DType::f32, 3, 1, 1, vf);
  Tensor mask = tensor(DType::f32, {2, 3}, {0, 0, 0, -INFINITY, -INFINITY, -INFINITY});
  Tensor out = run({q, k, v, mask});
  EXPECT_TRUE(std::isfinite(out.data[0]));
  EXPECT_TRUE(std::isnan(out.data[1]));
}

// Lq = 33: query blocks [0, 32) and [32, 33), which one thread runs in turn
// on one scratch. Row 32 has every key masked, row 0 none: the kv block is
// skipped for row 32 (max and sum stay), and qk_sum_data still holds row
// 0's sum, so row 32 is 0 * V / sum = 0. With two threads each block has
// its own zeroed scratch: 0 * (1 / 0) = NaN.
TEST(CustomSdpa, AFullyMaskedRowKeepsTheSumThePreviousQueryBlockLeft) {
  const Call c = row_32_masked(33);
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    EXPECT_EQ(run(c, n, {}, 1).data[32], 0.0);
    EXPECT_TRUE(std::isnan(run(c, n, {}, 2).data[32]));
    EXPECT_TRUE(std::isfinite(run(c, n, {}, 2).data[0]));
  }
}

// Two heads, Lq = 1, a zero mask: head 0's q is NaN, so its masked row max
// is NaN and so is its row sum. Head 1 is clean, but on one thread it
// inherits the NaN sum: the first block's rescale exp(-inf - max) = 0
// times NaN is NaN, and so is the row. On two threads it is finite.
TEST(CustomSdpa, ANanRowSumReachesTheSameRowOfTheThreadsNextHead) {
  Call c{bshd(DType::f32, 1, 2, 1, [](int64_t, int64_t h, int64_t) { return h == 0 ? NAN : 0.5; }),
         bshd(DType::f32, 3, 2, 1, kf), bshd(DType::f32, 3, 2, 1, vf)};
  c.mask = Tensor(DType::f32, {1, 3});
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    EXPECT_TRUE(std::isnan(run(c, n, {}, 1).data[1]));
    Tensor apart = run(c, n, {}, 2);
    EXPECT_TRUE(std::isnan(apart.data[0]));
    EXPECT_TRUE(std::isfinite(apart.data[1]));
  }
}

// Batch 2 of one head, Lq = 1, no mask: batch 1's q is NaN. Its unmasked
// row max drops the NaN (three keys: all in the scalar tail), so the block
// is skipped; on one thread the row keeps batch 0's sum and comes out 0,
// finite where aten is NaN. On two threads: 0 * (1 / 0) = NaN.
TEST(CustomSdpa, ASkippedNanRowAfterAnotherBlockComesOutZero) {
  Tensor q(DType::f32, {2, 1, 1, 1});
  q.data = {0.5, NAN};
  Tensor k(DType::f32, {2, 3, 1, 1}), v(DType::f32, {2, 3, 1, 1});
  for (int64_t i = 0; i < 6; ++i) {
    k.data[i] = 0.1 * i;
    v.data[i] = 1.0 + i;
  }
  Call c{q, k, v};
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    EXPECT_EQ(run(c, n, {}, 1).data[1], 0.0);
    EXPECT_TRUE(std::isnan(run(c, n, {}, 2).data[1]));
  }
}

// parallel_for gives task t the items [t * chunk, (t + 1) * chunk), chunk =
// ceil(items / threads): with 4 heads on 2 threads, heads 0-1 share one
// scratch and heads 2-3 the other. A NaN row sum in head 0 reaches head 1
// but not heads 2 and 3; in head 2 it reaches head 3 only.
TEST(CustomSdpa, ThreadsShareScratchInContiguousChunks) {
  for (int64_t nan_head : {0, 2}) {
    Call c{bshd(DType::f32, 1, 4, 1, [](int64_t, int64_t, int64_t) { return 0.5; }), bshd(DType::f32, 3, 4, 1, kf),
           bshd(DType::f32, 3, 4, 1, vf)};
    c.q.data[nan_head] = NAN;
    c.mask = Tensor(DType::f32, {1, 3});
    Tensor out = run(c, Numerics::emulated, {}, 2);
    for (int64_t h = 0; h < 4; ++h)
      EXPECT_EQ(std::isnan(out.data[h]), h == nan_head || h == nan_head + 1)
          << "NaN head " << nan_head << ", head " << h;
  }
}

TEST(CustomSdpa, CausalFillIsScaledSoScaleZeroGivesNan) {
  Call c{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 2, 1, 1, kf), bshd(DType::f32, 2, 1, 1, vf)};
  c.causal = true;
  c.scale = 0.0;
  Tensor out = run(c);
  EXPECT_TRUE(std::isnan(out.data[0]));  // -inf * 0 in row 0
  EXPECT_NEAR(out.data[1], 1.5, 1e-6);   // row 1 masks nothing: uniform weights
}

TEST(CustomSdpa, CausalWithANegativeScaleTurnsTheFillIntoPlusInfSoTheRowIsNan) {
  Call c{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 2, 1, 1, kf), bshd(DType::f32, 2, 1, 1, vf)};
  c.causal = true;
  c.scale = -0.5;
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    Tensor out = run(c, n);
    EXPECT_TRUE(std::isnan(out.data[0]));  // -inf * -0.5 = +inf is the max: exp(inf - inf); aten: 1.0
    // Row 1 masks nothing: softmax(0.125, 0.025) . (1, 2).
    EXPECT_NEAR(out.data[1], 1.4750208125210602, 1e-6);
  }
}

TEST(CustomSdpa, DropoutIsIgnored) {
  Call c{bshd(DType::f32, 3, 1, 2, qf), bshd(DType::f32, 3, 1, 2, kf), bshd(DType::f32, 3, 1, 2, vf)};
  Tensor plain = run(c);
  c.dropout = 0.5;
  EXPECT_EQ(run(c).data, plain.data);
}

TEST(CustomSdpa, BlockwiseSoftmaxOverSeveralKvBlocksMatchesExact) {
  // 600 keys: two kv blocks of 512; 200 query rows: q blocks of 64.
  Call c{bshd(DType::f32, 200, 1, 4, [](int64_t s, int64_t, int64_t d) { return std::sin(0.1 * s + d); }),
         bshd(DType::f32, 600, 1, 4, [](int64_t s, int64_t, int64_t d) { return std::cos(0.07 * s - d); }),
         bshd(DType::f32, 600, 1, 4, [](int64_t s, int64_t, int64_t d) { return 0.01 * s - 0.1 * d; })};
  c.start_pos = 400;
  c.causal = true;
  Tensor got = run(c), exact = run(c, Numerics::exact);
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.data[i], exact.data[i], 1e-5);
  EXPECT_EQ(q_split_size(200), 64);
  EXPECT_EQ(q_split_size(800), 256);
}

TEST(CustomSdpa, QSplitSizeChangesAt192And768) {
  EXPECT_EQ(q_split_size(1), 32);
  EXPECT_EQ(q_split_size(191), 32);
  EXPECT_EQ(q_split_size(192), 64);
  EXPECT_EQ(q_split_size(767), 64);
  EXPECT_EQ(q_split_size(768), 256);
}

TEST(CustomSdpa, Bf16RoundsPBeforePV) {
  // Scores 0 and -0.1001: P = (1, exp(-0.1001) = 0.90475), which bf16
  // rounds to 0.90625 before P @ V; the sum stays f32. With v = (0, 1) the
  // output is 0.90625 / 1.90475 = 0.47578 -> bf16 0.4765625, where the
  // unrounded P gives 0.47500 -> bf16 0.474609375.
  Call c{bshd(DType::bf16, 1, 1, 1, [](int64_t, int64_t, int64_t) { return 1.0; }),
         bshd(DType::bf16, 2, 1, 1, [](int64_t s, int64_t, int64_t) { return s == 0 ? 0.0 : -0.1; }),
         bshd(DType::bf16, 2, 1, 1, [](int64_t s, int64_t, int64_t) { return s == 0 ? 0.0 : 1.0; })};
  c.mask = Tensor(DType::f32, {1, 2});  // keeps both keys: no truncation to start_pos + Lq
  EXPECT_EQ(run(c).data[0], 0.4765625);
  EXPECT_EQ(round_to(DType::bf16, run(c, Numerics::exact).data[0]), 0.474609375);
}

TEST(CustomSdpa, F16RoundsPBeforePV) {
  // k1 = f16(-0.016) = -0.0160064697265625: P = (1, exp(k1) = 0.98412097),
  // which f16 rounds to 0.98388671875 before P @ V; the sum stays f32
  // (1.98412097). With v = (0, 1) the output is f16 0.495849609375, where
  // the unrounded P gives 0.49609375. (k1 = -0.1 gives 0.47509765625 both
  // ways, so it cannot tell them apart.)
  Call c{bshd(DType::f16, 1, 1, 1, [](int64_t, int64_t, int64_t) { return 1.0; }),
         bshd(DType::f16, 2, 1, 1, [](int64_t s, int64_t, int64_t) { return s == 0 ? 0.0 : -0.016; }),
         bshd(DType::f16, 2, 1, 1, [](int64_t s, int64_t, int64_t) { return s == 0 ? 0.0 : 1.0; })};
  ASSERT_EQ(c.k.data[1], -0.0160064697265625);
  c.mask = Tensor(DType::f32, {1, 2});  // keeps both keys: no truncation to start_pos + Lq
  EXPECT_EQ(run(c).data[0], 0.495849609375);
  EXPECT_EQ(round_to(DType::f16, run(c, Numerics::exact).data[0]), 0.49609375);
}

// Lq = Lkv = 520, E = 1, no mask: kv blocks [0, 512) and [512, 520). q = 1,
// k = 0 but k[3] = NaN, v[j] = j. Every score of block 0 lies in the
// vector part (512 = 64 * 8 lanes): its NaN max is dropped by std::max, the
// block looks fully masked and is skipped, and each row averages block 1
// alone: (512 + ... + 519) / 8 = 515.5, finite where aten gives NaN.
Call nan_in_first_block(int64_t nan_key) {
  Call c{bshd(DType::f32, 520, 1, 1, [](int64_t, int64_t, int64_t) { return 1.0; }),
         bshd(DType::f32, 520, 1, 1, [](int64_t, int64_t, int64_t) { return 0.0; }),
         bshd(DType::f32, 520, 1, 1, [](int64_t s, int64_t, int64_t) { return static_cast<double>(s); })};
  c.k.data[nan_key] = std::nan("");
  return c;
}

TEST(CustomSdpa, UnmaskedRowMaxDropsANanOfTheVectorLanesSoTheBlockIsSkipped) {
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    Tensor out = run(nan_in_first_block(3), n);
    EXPECT_EQ(out.data[0], 515.5);
    EXPECT_EQ(out.data[519], 515.5);
  }
}

// The dropped NaN gives a finite row only because the block is then
// skipped (f3e8972de6): in the tree before it, exp(NaN - -inf) keeps the NaN
// in the row, as aten does.
TEST(CustomSdpaRevision, BeforeApril2025TheDroppedNanStillReachesTheRow) {
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    Tensor out = run(nan_in_first_block(3), n, {}, 1, revision("2025-04-24"));
    EXPECT_TRUE(std::isnan(out.data[0]));
    EXPECT_TRUE(std::isnan(out.data[519]));
  }
}

TEST(CustomSdpa, AMaskedRowMaxPropagatesTheNan) {
  Call c = nan_in_first_block(3);
  c.mask = Tensor(DType::f32, {520, 520});  // all 0: keeps every key
  Tensor out = run(c);
  EXPECT_TRUE(std::isnan(out.data[0]));
  EXPECT_TRUE(std::isnan(out.data[519]));
}

TEST(CustomSdpa, ANanInTheScalarTailIsDroppedButStillReachesExp) {
  // 10 keys, one block: lanes 0-7 vector, 8-9 the tail. NaN at key 9: the
  // max is taken over the others, then exp(NaN - max) makes the sum NaN.
  Call c{bshd(DType::f32, 10, 1, 1, [](int64_t, int64_t, int64_t) { return 1.0; }),
         bshd(DType::f32, 10, 1, 1, [](int64_t, int64_t, int64_t) { return 0.0; }),
         bshd(DType::f32, 10, 1, 1, [](int64_t s, int64_t, int64_t) { return static_cast<double>(s); })};
  c.k.data[9] = std::nan("");
  EXPECT_TRUE(std::isnan(run(c).data[0]));
}

TEST(CustomSdpa, ASkippedBlockStillMultipliesZeroIntoV) {
  // One query row, 520 keys: the mask drops block 0 ([0, 512)) and keeps
  // block 1, v[j] = j. Block 0 is skipped, yet its P @ V adds 0 * v: with
  // v[3] = inf the row is NaN (aten: weight 0 * inf = NaN as well); with v
  // finite it averages block 1: 515.5.
  Call c{bshd(DType::f32, 1, 1, 1, [](int64_t, int64_t, int64_t) { return 1.0; }),
         bshd(DType::f32, 520, 1, 1, [](int64_t, int64_t, int64_t) { return 0.0; }),
         bshd(DType::f32, 520, 1, 1, [](int64_t s, int64_t, int64_t) { return static_cast<double>(s); })};
  Tensor mask(DType::f32, {1, 520});
  for (int64_t j = 0; j < 512; ++j) mask.data[j] = -INFINITY;
  c.mask = mask;
  EXPECT_EQ(run(c).data[0], 515.5);
  c.v.data[3] = INFINITY;
  EXPECT_TRUE(std::isnan(run(c).data[0]));
  EXPECT_TRUE(std::isnan(run(c, Numerics::exact).data[0]));
}

// The masks of batched serving empty whole kv blocks: a left padding over
// block 0 skips it (m_new = -inf: max and sum stay, P @ V adds 0 * V), a
// right padding over block 1 meets a finite row max (p = 0, the rescale
// exp(0) = 1). Either way the rows equal the call on the live block's keys
// alone, bit for bit (f32 and bf16, -inf and lowest-f32 fills).
TEST(CustomSdpa, AKvBlockTheMaskEmptiesLeavesTheOtherBlocksResult) {
  const int64_t Lq = 3, block = 512;
  auto qv = [](int64_t s, int64_t, int64_t d) { return std::sin(0.7 * s + d); };
  auto kv = [](int64_t s, int64_t, int64_t d) { return std::cos(0.05 * s - d); };
  auto vv = [](int64_t s, int64_t, int64_t d) { return 0.01 * s - 0.3 * d; };
  for (DType t : {DType::f32, DType::bf16})
    for (double fill : {-static_cast<double>(INFINITY), lowest(DType::f32)})
      for (bool left : {true, false}) {
        Call whole{bshd(t, Lq, 1, 2, qv), bshd(t, 2 * block, 1, 2, kv), bshd(t, 2 * block, 1, 2, vv)};
        Tensor mask(DType::f32, {Lq, 2 * block});
        for (int64_t i = 0; i < Lq; ++i)
          for (int64_t j = 0; j < 2 * block; ++j) mask.data[i * 2 * block + j] = (j < block) == left ? fill : 0.0;
        whole.mask = mask;
        Call live{whole.q, Tensor(t, {1, block, 1, 2}), Tensor(t, {1, block, 1, 2}), Tensor(DType::f32, {Lq, block})};
        const int64_t from = left ? block : 0;
        std::copy_n(whole.k.data.begin() + from * 2, block * 2, live.k.data.begin());
        std::copy_n(whole.v.data.begin() + from * 2, block * 2, live.v.data.begin());
        for (Numerics n : {Numerics::emulated, Numerics::exact})
          EXPECT_EQ(run(whole, n).data, run(live, n).data)
              << dtype_name(t) << " fill " << fill << (left ? " left" : " right") << " padding";
      }
}

TEST(CustomSdpa, AnInfScoreGivesNanAsInAten) {
  // k[1] = inf: score +inf is the max, exp(inf - inf) = NaN.
  Call c{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 2, 1, 1, kf), bshd(DType::f32, 2, 1, 1, vf)};
  c.k.data[1] = INFINITY;
  Tensor out = run(c);
  EXPECT_TRUE(std::isnan(out.data[0]));
  EXPECT_TRUE(std::isnan(out.data[1]));
}

TEST(CustomSdpa, QueryLengthZeroDiesDividingByQSplitSize) {
  Call c{Tensor(DType::f32, {1, 0, 1, 1}), bshd(DType::f32, 3, 1, 1, kf), bshd(DType::f32, 3, 1, 1, vf)};
  for (bool masked : {false, true}) {
    if (masked) c.mask = Tensor(DType::f32, {0, 3});
    try {
      run(c);
      ADD_FAILURE() << "no error, masked " << masked;
    } catch (const KernelError& e) {
      EXPECT_EQ(e.kind, KernelError::Kind::fatal);
      EXPECT_NE(std::string(e.what()).find("SIGFPE (integer divide by zero)"), std::string::npos) << e.what();
    }
  }
}

TEST(CustomSdpa, EmptyBatchAndKeysFollowUpstream) {
  // B = 0: nothing to compute, an empty output.
  Call b0{Tensor(DType::f32, {0, 2, 1, 1}), Tensor(DType::f32, {0, 2, 1, 1}), Tensor(DType::f32, {0, 2, 1, 1})};
  EXPECT_EQ(run(b0).shape, (Shape{0, 2, 1, 1}));
  // Lkv = 0 with a [Lq, 0] mask: no key block, sum 0, 0 * (1 / 0) = NaN.
  Call kv0{bshd(DType::f32, 2, 1, 1, qf), Tensor(DType::f32, {1, 0, 1, 1}), Tensor(DType::f32, {1, 0, 1, 1}),
           Tensor(DType::f32, {2, 0})};
  Tensor out = run(kv0);
  EXPECT_TRUE(std::isnan(out.data[0]) && std::isnan(out.data[1]));
}

TEST(CustomSdpa, TheNanToZeroFaultRewritesNanOutputs) {
  Tensor q = bshd(DType::f32, 2, 1, 1, qf), k = bshd(DType::f32, 3, 1, 1, kf), v = bshd(DType::f32, 3, 1, 1, vf);
  Graph g;
  ValueRef qr = g.placeholder("q", {DType::f32, sym(q.shape)});
  ValueRef kr = g.placeholder("k", {DType::f32, sym(k.shape)});
  ValueRef vr = g.placeholder("v", {DType::f32, sym(v.shape)});
  ValueRef mr = g.placeholder("mask", {DType::f32, {2, 3}});
  g.outputs = {g.call(kCustomSdpaOp, {qr, kr, vr, int64_t{0}, mr, 0.0, false, None{}}, {}, {{DType::f32, sym(q.shape)}})};
  KernelSet ks("t");
  ks.add(kCustomSdpaOp, custom_sdpa_kernel(Numerics::emulated, {DType::f32, true}));
  Tensor mask = tensor(DType::f32, {2, 3}, {0, 0, 0, -INFINITY, -INFINITY, -INFINITY});
  Tensor out = interpret(g, ks, {{"q", q}, {"k", k}, {"v", v}, {"mask", mask}}, {}).outputs[0];
  EXPECT_TRUE(std::isfinite(out.data[0]));
  EXPECT_EQ(out.data[1], 0.0);  // upstream: NaN (FullyMaskedRowIsNan)
}

// A KV-cache step, E = 1: q = 0, so every kept key weighs the same and a
// row's output is the mean of v over the keys it keeps; v[j] = j, so the
// mean of keys 0..K is K / 2 exactly (in f32 too: the sums are integers
// below 2^24). Row i of a causal call at start_pos keeps 0..start_pos + i.
Call cache_step(int64_t Lq, int64_t Lkv, int64_t start_pos) {
  Call c{bshd(DType::f32, Lq, 1, 1, [](int64_t, int64_t, int64_t) { return 0.0; }),
         bshd(DType::f32, Lkv, 1, 1, [](int64_t, int64_t, int64_t) { return 1.0; }),
         bshd(DType::f32, Lkv, 1, 1, [](int64_t s, int64_t, int64_t) { return static_cast<double>(s); })};
  c.causal = true;
  c.start_pos = start_pos;
  return c;
}

TEST(CustomSdpaStartPos, DecodePastTheKvBlockEdgeReadsBothBlocks) {
  // start_pos 520, Lkv 600: kvSize = 521, blocks [0, 512) and [512, 521);
  // the one query keeps keys 0..520: mean 260.
  EXPECT_EQ(run(cache_step(1, 600, 520), Numerics::exact).data[0], 260.0);
  EXPECT_EQ(run(cache_step(1, 600, 512), Numerics::exact).data[0], 256.0);  // key 512: one key into block 1
  EXPECT_EQ(run(cache_step(1, 600, 511), Numerics::exact).data[0], 255.5);  // exactly block 0
  // f32: the sums are exact, 1 / sum and the product round once each.
  EXPECT_NEAR(run(cache_step(1, 600, 520)).data[0], 260.0, 260.0 * 0x1p-22);
}

TEST(CustomSdpaStartPos, ChunkedPrefillStraddlingTheEdgeFillsEachBlockPerRow) {
  // Lq 4 at start_pos 510: row i keeps 0..510 + i, so rows 0 and 1 end in
  // block 0 (block 1 filled from column 0) and rows 2 and 3 read one and
  // two keys of block 1: (510 + i) / 2.
  Tensor out = run(cache_step(4, 600, 510), Numerics::exact);
  EXPECT_EQ(out.data, (std::vector<double>{255.0, 255.5, 256.0, 256.5}));
}

TEST(CustomSdpaStartPos, EveryQueryBlockOffsetsItsKeysByStartPos) {
  // Lq 40: query blocks [0, 32) and [32, 40) (q_split_size 32); at
  // start_pos 500 the second block's num_keys is min(32 + 500 + 8, 540) = 540,
  // past the 512-key edge, and its rows start mid-block.
  Tensor out = run(cache_step(40, 540, 500), Numerics::exact);
  for (int64_t i = 0; i < 40; ++i) EXPECT_EQ(out.data[i], (500.0 + i) / 2) << "row " << i;
  // Three kv blocks: at start_pos 1023 the rows end at keys 1023, 1024 and
  // 1025, the last two in the block from 1024.
  Tensor wide = run(cache_step(3, 1100, 1023), Numerics::exact);
  EXPECT_EQ(wide.data, (std::vector<double>{511.5, 512.0, 512.5}));
}

TEST(CustomSdpaStartPos, CausalOffsetFaultAlignsTopLeftAndOnlyStartPosShowsIt) {
  KernelFault fault;
  fault.causal_offset_ignores_start_pos = true;
  // start_pos 0: the fault computes the same as upstream.
  EXPECT_EQ(run(cache_step(3, 8, 0), Numerics::exact, fault).data, run(cache_step(3, 8, 0), Numerics::exact).data);
  // start_pos 5: row i keeps 0..i (mean i / 2), upstream 0..5 + i.
  EXPECT_EQ(run(cache_step(3, 8, 5), Numerics::exact, fault).data, (std::vector<double>{0.0, 0.5, 1.0}));
  EXPECT_EQ(run(cache_step(3, 8, 5), Numerics::exact).data, (std::vector<double>{2.5, 3.0, 3.5}));
}

TEST(CustomSdpaStartPos, NumKeysFaultStopsAtTheQueryBlockSoOnlyTheBlockEdgeShowsIt) {
  KernelFault fault;
  fault.num_keys_without_start_pos = true;
  // Within one kv block the loop still reads it all: the same as upstream.
  EXPECT_EQ(run(cache_step(1, 600, 300), Numerics::exact, fault).data[0], 150.0);
  EXPECT_EQ(run(cache_step(1, 600, 511), Numerics::exact, fault).data[0], 255.5);
  // start_pos 520: num_keys min(0 + 1, 521) = 1, only block 0 is read:
  // keys 0..511, mean 255.5 instead of 260.
  EXPECT_EQ(run(cache_step(1, 600, 520), Numerics::exact, fault).data[0], 255.5);
  EXPECT_EQ(run(cache_step(1, 600, 512), Numerics::exact, fault).data[0], 255.5);
}

}  // namespace
}  // namespace sdpa::llm
