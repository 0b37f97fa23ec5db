#include "harness/ir/kernels/reference_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "harness/ir/interpreter.h"

namespace sdpa {
namespace {

Tensor tensor(DType t, Shape s, std::vector<double> v) {
  Tensor x(t, std::move(s));
  x.data = std::move(v);
  return x;
}

SymShape sym(const Shape& s) {
  SymShape out;
  for (int64_t d : s) out.push_back(d);
  return out;
}

// Runs one op on inputs x0, x1, ... and returns its first output.
Tensor run(const KernelSet& k, const std::string& op, std::vector<Tensor> inputs,
           std::vector<Arg> extra, DType out, Shape out_shape,
           std::vector<std::pair<std::string, Arg>> kwargs = {}) {
  Graph g;
  std::vector<Arg> args;
  std::map<std::string, Tensor> bound;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "x" + std::to_string(i);
    args.push_back(g.placeholder(name, {inputs[i].dtype, sym(inputs[i].shape)}));
    bound[name] = inputs[i];
  }
  args.insert(args.end(), extra.begin(), extra.end());
  g.outputs = {g.call(op, args, kwargs, {{out, sym(out_shape)}})};
  return interpret(g, k, bound, {}).outputs[0];
}

TEST(ReferenceKernels, EmulatedMatmulRoundsToBf16ExactDoesNot) {
  KernelSet emulated = make_reference_kernels("t", Numerics::emulated);
  Tensor a = tensor(DType::bf16, {1, 2}, {1.0, 1.0});
  Tensor b = tensor(DType::bf16, {2, 1}, {1.0, std::ldexp(1.0, -9)});
  EXPECT_EQ(run(emulated, "aten.matmul.default", {a, b}, {}, DType::bf16, {1, 1}).data[0], 1.0);
  EXPECT_EQ(run(exact_kernels(), "aten.matmul.default", {a, b}, {}, DType::bf16, {1, 1}).data[0],
            1.0 + std::ldexp(1.0, -9));
}

TEST(ReferenceKernels, ConstantPadAndSliceOfTheLastDimUndoEachOther) {
  const KernelSet k = make_reference_kernels("exact", Numerics::exact);
  Tensor x = tensor(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor padded = run(k, "aten.constant_pad_nd.default", {x}, {SymShape{SymExpr(0), SymExpr(2)}, 0.0},
                      DType::f32, {2, 5});
  EXPECT_EQ(padded.shape, (Shape{2, 5}));
  EXPECT_EQ(padded.data, (std::vector<double>{1, 2, 3, 0, 0, 4, 5, 6, 0, 0}));
  Tensor back = run(k, "aten.slice.Tensor", {padded}, {int64_t{-1}, int64_t{0}, int64_t{3}}, DType::f32, {2, 3});
  EXPECT_EQ(back.data, x.data);
  Tensor tail = run(k, "aten.slice.Tensor", {padded}, {int64_t{1}, int64_t{2}, int64_t{9}}, DType::f32, {2, 3});
  EXPECT_EQ(tail.data, (std::vector<double>{3, 0, 0, 6, 0, 0}));  // end clamped to the size
}

TEST(ReferenceKernels, SafeSoftmaxZeroesFullyMaskedRows) {
  Tensor x = tensor(DType::f32, {2, 2}, {0.0, 0.0, -INFINITY, -INFINITY});
  Tensor safe = run(exact_kernels(), "aten._safe_softmax.default", {x}, {int64_t{-1}}, DType::f32, {2, 2});
  EXPECT_EQ(safe.data, (std::vector<double>{0.5, 0.5, 0.0, 0.0}));
  Tensor plain = run(exact_kernels(), "aten._softmax.default", {x}, {int64_t{-1}, false}, DType::f32, {2, 2});
  EXPECT_TRUE(std::isnan(plain.data[2]));
}

// A softmax over a dim that is not the last reads its rows strided: each
// row must give what the same row gives over the last dim of the
// transposed tensor, bit for bit, a fully masked row included, in every
// numerics and dtype.
TEST(ReferenceKernels, SoftmaxOverAnInnerDimIsTheLastDimsSoftmaxTransposed) {
  const Shape shape{2, 3, 4};  // softmax over dim 1 (rows of 3, 4 apart)
  std::vector<double> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(1.7 * static_cast<double>(i)) * 9.0;
  for (int64_t j = 0; j < 3; ++j) v[static_cast<size_t>(12 + j * 4 + 2)] = -INFINITY;  // row (1, :, 2)
  const KernelSet emulated = make_reference_kernels("e", Numerics::emulated);
  const KernelSet naive = make_reference_kernels("n", Numerics::naive);
  for (const KernelSet* k : {&exact_kernels(), &emulated, &naive})
    for (DType t : {DType::f64, DType::f32, DType::bf16})
      for (const char* op : {"aten._safe_softmax.default", "aten._softmax.default"}) {
        Tensor x = tensor(t, shape, v);
        for (double& e : x.data) e = round_to(t, e);
        const bool plain = std::string(op) == "aten._softmax.default";
        std::vector<Arg> dim1{int64_t{1}}, last{int64_t{-1}};
        if (plain) dim1.push_back(false), last.push_back(false);
        Tensor inner = run(*k, op, {x}, dim1, t, shape);
        Tensor xt = run(*k, "aten.transpose.int", {x}, {int64_t{1}, int64_t{2}}, t, {2, 4, 3});
        Tensor lastd = run(*k, op, {xt}, last, t, {2, 4, 3});
        for (int64_t b = 0; b < 2; ++b)
          for (int64_t i = 0; i < 3; ++i)
            for (int64_t c = 0; c < 4; ++c) {
              const double got = inner.data[static_cast<size_t>((b * 3 + i) * 4 + c)];
              const double want = lastd.data[static_cast<size_t>((b * 4 + c) * 3 + i)];
              if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << k->name() << " " << op;
              else EXPECT_EQ(got, want) << k->name() << " " << dtype_name(t) << " " << op << " " << b << i << c;
            }
        // The fully masked row: 0 from _safe_softmax, NaN from _softmax.
        if (plain) EXPECT_TRUE(std::isnan(inner.data[12 + 2]));
        else EXPECT_EQ(inner.data[12 + 2], 0.0);
      }
}

// add, sub, mul and div, .Tensor (broadcast, with alpha) and .Scalar: each
// element is the op in double rounded as the output dtype's op math gives
// it (f32, then the dtype), in the emulated set; the exact set rounds not.
TEST(ReferenceKernels, ElementwiseOpsRoundEachResultToTheOutputDtype) {
  const KernelSet emulated = make_reference_kernels("e", Numerics::emulated);
  const double third = 1.0 / 3.0;
  Tensor x = tensor(DType::f64, {2, 2}, {1.0, 2.0, 3.0, 5.0});
  Tensor row = tensor(DType::f64, {2}, {third, 7.0});
  const std::vector<std::pair<std::string, double (*)(double, double)>> ops{
      {"add", [](double a, double b) { return a + b; }},
      {"sub", [](double a, double b) { return a - b; }},
      {"mul", [](double a, double b) { return a * b; }},
      {"div", [](double a, double b) { return a / b; }}};
  for (const auto& [name, f] : ops)
    for (DType t : {DType::f32, DType::bf16}) {
      Tensor alpha = run(emulated, "aten." + name + ".Tensor", {x, row}, {}, t, {2, 2}, {{"alpha", 3.0}});
      Tensor scalar = run(emulated, "aten." + name + ".Scalar", {x}, {third}, t, {2, 2});
      Tensor exact = run(exact_kernels(), "aten." + name + ".Tensor", {x, row}, {}, t, {2, 2});
      for (size_t i = 0; i < 4; ++i) {
        const double y = row.data[i % 2];
        EXPECT_EQ(alpha.data[i], round_to(t, round_to(DType::f32, f(x.data[i], y * 3.0)))) << name << i;
        EXPECT_EQ(scalar.data[i], round_to(t, round_to(DType::f32, f(x.data[i], static_cast<float>(third)))))
            << name << i;
        EXPECT_EQ(exact.data[i], f(x.data[i], y)) << name << i;
      }
    }
}

TEST(ReferenceKernels, RepeatInterleaveVersusRepeat) {
  Tensor x = tensor(DType::f32, {2, 1}, {1.0, 2.0});
  EXPECT_EQ(run(exact_kernels(), "aten.repeat_interleave.self_int", {x}, {int64_t{2}, int64_t{0}}, DType::f32, {4, 1}).data,
            (std::vector<double>{1, 1, 2, 2}));
  EXPECT_EQ(run(exact_kernels(), "aten.repeat.default", {x}, {SymShape{SymExpr(2), SymExpr(1)}}, DType::f32, {4, 1}).data,
            (std::vector<double>{1, 2, 1, 2}));
}

TEST(ReferenceKernels, SdpaCausalIsTopLeftAndGqaInterleaves) {
  // q [1 head, 2 rows, E=1], k/v [2 keys]: causal row 0 sees key 0 only.
  Tensor q = tensor(DType::f64, {1, 2, 1}, {1.0, 1.0});
  Tensor k = tensor(DType::f64, {1, 3, 1}, {0.0, 1.0, 2.0});
  Tensor v = tensor(DType::f64, {1, 3, 1}, {10.0, 20.0, 30.0});
  Tensor out = run(exact_kernels(), "aten.scaled_dot_product_attention.default", {q, k, v},
                   {None{}, 0.0, true}, DType::f64, {1, 2, 1});
  EXPECT_EQ(out.data[0], 10.0);
  double w0 = std::exp(0.0), w1 = std::exp(1.0);
  EXPECT_NEAR(out.data[1], (10 * w0 + 20 * w1) / (w0 + w1), 1e-12);

  // Hq 4, Hkv 2: heads 0,1 read kv head 0, heads 2,3 read kv head 1.
  Tensor q4 = tensor(DType::f64, {4, 1, 1}, {1, 1, 1, 1});
  Tensor k2 = tensor(DType::f64, {2, 1, 1}, {0, 0});
  Tensor v2 = tensor(DType::f64, {2, 1, 1}, {5, 7});
  Tensor gqa = run(exact_kernels(), "aten.scaled_dot_product_attention.default", {q4, k2, v2},
                   {None{}, 0.0, false}, DType::f64, {4, 1, 1}, {{"enable_gqa", true}});
  EXPECT_EQ(gqa.data, (std::vector<double>{5, 5, 7, 7}));
}

// Each query head of a GQA or MQA call, of every batch element, gives what
// a call with that head alone and its group's key and value head gives,
// bit for bit, in every numerics: a kernel that reuses one head's prepared
// keys for another group's (or for the next batch element's) fails.
TEST(ReferenceKernels, EachGroupedHeadIsItsOwnSingleHeadCall) {
  const int64_t B = 2, Hq = 4, L = 3, E = 2;
  const KernelSet emulated = make_reference_kernels("e", Numerics::emulated);
  const KernelSet naive = make_reference_kernels("n", Numerics::naive);
  for (const KernelSet* k : {&exact_kernels(), &emulated, &naive})
    for (DType t : {DType::f32, DType::bf16})
      for (int64_t Hkv : {2, 1}) {
        auto filled = [&](Shape s, double phase) {
          Tensor x(t, std::move(s));
          for (size_t i = 0; i < x.data.size(); ++i)
            x.data[i] = round_to(t, 2.0 * std::sin(phase + 0.9 * static_cast<double>(i)));
          return x;
        };
        Tensor q = filled({B, Hq, L, E}, 0.1), kk = filled({B, Hkv, L, E}, 1.3), v = filled({B, Hkv, L, E}, 2.9);
        Tensor grouped = run(*k, "aten.scaled_dot_product_attention.default", {q, kk, v}, {None{}, 0.0, false}, t,
                             {B, Hq, L, E}, {{"enable_gqa", true}});
        // The [1, 1, L, E] block of head h of batch element b.
        auto block = [&](const Tensor& x, int64_t heads, int64_t b, int64_t h) {
          Tensor r(t, {1, 1, L, E});
          const auto from = x.data.begin() + (b * heads + h) * L * E;
          std::copy(from, from + L * E, r.data.begin());
          return r;
        };
        for (int64_t b = 0; b < B; ++b)
          for (int64_t h = 0; h < Hq; ++h) {
            const int64_t hk = h / (Hq / Hkv);
            Tensor one = run(*k, "aten.scaled_dot_product_attention.default",
                             {block(q, Hq, b, h), block(kk, Hkv, b, hk), block(v, Hkv, b, hk)},
                             {None{}, 0.0, false}, t, {1, 1, L, E});
            EXPECT_EQ(block(grouped, Hq, b, h).data, one.data)
                << k->name() << " " << dtype_name(t) << " Hkv " << Hkv << " b " << b << " h " << h;
          }
      }
}

// attn_mask, dropout_p and is_causal are positional-or-keyword in aten's
// schemas (and attn_bias, compute_log_sumexp in the efficient op's): a call
// passing them by keyword means what the positional call means, and one
// passing a parameter both ways is refused, as PyTorch refuses it.
TEST(ReferenceKernels, AttentionTakesItsParametersByPositionOrKeyword) {
  const int64_t L = 3, E = 2;
  Tensor q(DType::f32, {1, 2, L, E}), k(DType::f32, {1, 2, L, E}), v(DType::f32, {1, 2, L, E});
  for (size_t i = 0; i < q.data.size(); ++i) {
    q.data[i] = std::sin(0.7 * static_cast<double>(i));
    k.data[i] = std::cos(1.1 * static_cast<double>(i));
    v.data[i] = static_cast<double>(i % 5) - 2.0;
  }
  Tensor mask = tensor(DType::b8, {L, L}, {1, 0, 1, 1, 1, 0, 0, 1, 1});
  using Kwargs = std::vector<std::pair<std::string, Arg>>;
  // One call of `op` on q, k, v (and the mask, where `mask_at` says: an
  // argument index, or -1 for keyword `mask_key`), then `extra` and `kwargs`.
  auto call = [&](const KernelSet& ks, const std::string& op, int mask_at, const std::string& mask_key,
                  std::vector<Arg> extra, Kwargs kwargs) {
    Graph g;
    std::vector<Arg> args;
    std::map<std::string, Tensor> bound;
    for (const auto& [name, t] : std::vector<std::pair<std::string, const Tensor*>>{{"q", &q}, {"k", &k}, {"v", &v}}) {
      args.push_back(g.placeholder(name, {t->dtype, sym(t->shape)}));
      bound[name] = *t;
    }
    if (mask_at != -2) {
      ValueRef m = g.placeholder("mask", {mask.dtype, sym(mask.shape)});
      bound["mask"] = mask;
      if (mask_at >= 0) args.push_back(m);
      else kwargs.emplace_back(mask_key, m);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<ValueInfo> outs = {{DType::f32, sym({1, 2, L, E})}};
    if (op != "aten.scaled_dot_product_attention.default") outs.push_back({DType::f32, sym({1, 2, L})});
    g.outputs = {g.call(op, args, kwargs, outs)};
    return interpret(g, ks, bound, {}).outputs[0].data;
  };
  const std::string sdpa = "aten.scaled_dot_product_attention.default";
  const std::string flash = "aten._scaled_dot_product_flash_attention.default";
  const std::string efficient = "aten._scaled_dot_product_efficient_attention.default";
  const KernelSet emulated = make_reference_kernels("e", Numerics::emulated);
  for (const KernelSet* ks : {&exact_kernels(), &emulated}) {
    const auto masked = call(*ks, sdpa, 3, "", {0.0, false}, {});
    EXPECT_EQ(call(*ks, sdpa, -1, "attn_mask", {}, {}), masked) << ks->name();
    EXPECT_EQ(call(*ks, sdpa, -1, "attn_mask", {}, {{"is_causal", false}, {"dropout_p", 0.0}}), masked);
    EXPECT_NE(call(*ks, sdpa, -2, "", {}, {}), masked);  // the mask matters
    const auto causal = call(*ks, sdpa, -2, "", {None{}, 0.0, true}, {});
    EXPECT_EQ(call(*ks, sdpa, -2, "", {}, {{"is_causal", true}}), causal) << ks->name();
    EXPECT_EQ(call(*ks, sdpa, -2, "", {None{}}, {{"is_causal", true}}), causal);
    EXPECT_NE(call(*ks, sdpa, -2, "", {}, {}), causal);
    EXPECT_EQ(call(*ks, flash, -2, "", {}, {{"is_causal", true}}), call(*ks, flash, -2, "", {0.0, true}, {}));
    const auto biased = call(*ks, efficient, 3, "", {true, 0.0, true}, {});
    EXPECT_EQ(call(*ks, efficient, -1, "attn_bias", {}, {{"compute_log_sumexp", true}, {"is_causal", true}}), biased);
    EXPECT_EQ(call(*ks, efficient, 3, "", {true}, {{"is_causal", true}}), biased);
    try {
      call(*ks, sdpa, 3, "", {}, {{"attn_mask", None{}}});
      ADD_FAILURE() << "a mask given by position and by keyword was taken";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("got multiple values for argument 'attn_mask'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(ReferenceKernels, SdpaFullyMaskedRowIsZero) {
  Tensor q = tensor(DType::f32, {1, 2, 1}, {1.0, 1.0});
  Tensor k = tensor(DType::f32, {1, 2, 1}, {1.0, 2.0});
  Tensor v = tensor(DType::f32, {1, 2, 1}, {3.0, 4.0});
  Tensor mask = tensor(DType::b8, {2, 2}, {1, 1, 0, 0});
  Tensor out = run(make_reference_kernels("n", Numerics::emulated), "aten.scaled_dot_product_attention.default",
                   {q, k, v, mask}, {0.0, false}, DType::f32, {1, 2, 1});
  EXPECT_EQ(out.data[1], 0.0);
  EXPECT_GT(out.data[0], 3.0);
}


// Rounded numerics sum each score over E, and each output over the keys,
// in index order in the accumulation type. In f32, key 0's score is
// (2^24 + 1) - 2^24 = 0 (2^24 + 1 rounds to 2^24), so the four weights are
// 1/4 each, and the output (2^24 + 1) - 2^24 + 0 is 0 too; any other order,
// or a double accumulator, gives another score or output.
TEST(ReferenceKernels, SdpaSumsEachScoreAndOutputInOrderInItsAccumulator) {
  const double big = 16777216.0;  // 2^24
  Tensor q = tensor(DType::f32, {1, 1, 3}, {1, 1, 1});
  Tensor k = tensor(DType::f32, {1, 4, 3}, {big, 1, -big, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  Tensor v = tensor(DType::f32, {1, 4, 1}, {4 * big, 4, -4 * big, 0});
  for (Numerics mode : {Numerics::emulated, Numerics::naive}) {
    Tensor out = run(make_reference_kernels("r", mode), "aten.scaled_dot_product_attention.default", {q, k, v},
                     {None{}, 0.0, false}, DType::f32, {1, 1, 1}, {{"scale", 1.0}});
    EXPECT_EQ(out.data[0], 0.0) << static_cast<int>(mode);
  }
  // In f64 key 0's score is 1: its weight e / (e + 3).
  Tensor q64 = q, k64 = k, v64 = v;
  q64.dtype = k64.dtype = v64.dtype = DType::f64;
  Tensor out = run(make_reference_kernels("r", Numerics::naive), "aten.scaled_dot_product_attention.default",
                   {q64, k64, v64}, {None{}, 0.0, false}, DType::f64, {1, 1, 1}, {{"scale", 1.0}});
  const double e = std::exp(1.0);
  EXPECT_NEAR(out.data[0], (e * 4 * big + 4 - 4 * big) / (e + 3), 1e-6);
}

// Element [i0, i1, ...] of a row-major tensor of `shape`.
double at(const Tensor& t, const std::vector<int64_t>& idx) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off = off * t.shape[d] + idx[d];
  return t.data[off];
}

Tensor iota(DType t, Shape s) {
  Tensor x(t, std::move(s));
  for (int64_t i = 0; i < x.numel(); ++i) x.data[i] = static_cast<double>(i);
  return x;
}

TEST(ReferenceKernels, PermuteExpandAndBroadcastReadTheRightElements) {
  Tensor x = iota(DType::f64, {2, 3, 4, 5});
  Tensor p = run(exact_kernels(), "aten.permute.default", {x}, {SymShape{SymExpr(2), SymExpr(0), SymExpr(3), SymExpr(1)}},
                 DType::f64, {4, 2, 5, 3});
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t c = 0; c < 5; ++c)
        for (int64_t d = 0; d < 3; ++d) ASSERT_EQ(at(p, {a, b, c, d}), at(x, {b, d, a, c}));
  Tensor row = iota(DType::f64, {3, 1, 5});
  Tensor e = run(exact_kernels(), "aten.expand.default", {row}, {SymShape{SymExpr(2), SymExpr(3), SymExpr(4), SymExpr(5)}},
                 DType::f64, {2, 3, 4, 5});
  for (int64_t f = 0; f < e.numel(); ++f) {
    const int64_t j = f % 5, h = (f / 20) % 3;
    ASSERT_EQ(e.data[f], row.data[h * 5 + j]) << f;
  }
  // [2, 3, 4, 5] + [4, 1]: the second operand broadcasts over dims 0, 1 and 3.
  Tensor col = iota(DType::f64, {4, 1});
  Tensor sum = run(exact_kernels(), "aten.add.Tensor", {x, col}, {}, DType::f64, {2, 3, 4, 5});
  for (int64_t f = 0; f < sum.numel(); ++f) ASSERT_EQ(sum.data[f], x.data[f] + static_cast<double>((f / 5) % 4)) << f;
  Tensor cond = tensor(DType::b8, {1, 5}, {1, 0, 1, 0, 0});
  Tensor w = run(exact_kernels(), "aten.where.self", {cond, x, col}, {}, DType::f64, {2, 3, 4, 5});
  for (int64_t f = 0; f < w.numel(); ++f)
    ASSERT_EQ(w.data[f], cond.data[f % 5] != 0 ? x.data[f] : static_cast<double>((f / 5) % 4)) << f;
  Tensor scalar = tensor(DType::f64, {}, {7.0});
  EXPECT_EQ(run(exact_kernels(), "aten.expand.default", {scalar}, {SymShape{SymExpr(2)}}, DType::f64, {2}).data,
            (std::vector<double>{7.0, 7.0}));
}

// A mask broadcast over batch and head dims reads what the full-size mask
// holds: the kernel's strided reads match an explicit expand.
TEST(ReferenceKernels, SdpaReadsABroadcastMaskAsItsExpansion) {
  const Shape qs{2, 3, 4, 2}, ks{2, 3, 5, 2};
  Tensor q = iota(DType::f64, qs), k = iota(DType::f64, ks), v = iota(DType::f64, ks);
  for (double& x : q.data) x = std::sin(x);
  for (double& x : k.data) x = std::cos(x);
  Tensor small(DType::f64, {2, 1, 4, 5});
  for (int64_t i = 0; i < small.numel(); ++i) small.data[i] = std::sin(3.0 * i);
  Tensor full(DType::f64, {2, 3, 4, 5});
  for (int64_t f = 0; f < full.numel(); ++f) full.data[f] = small.data[(f / 60) * 20 + f % 20];
  for (const KernelSet* ks_ : {&exact_kernels(), &naive_kernels()}) {
    Tensor a = run(*ks_, "aten.scaled_dot_product_attention.default", {q, k, v, small}, {0.0, false}, DType::f64, {2, 3, 4, 2});
    Tensor b = run(*ks_, "aten.scaled_dot_product_attention.default", {q, k, v, full}, {0.0, false}, DType::f64, {2, 3, 4, 2});
    EXPECT_EQ(a.data, b.data) << ks_->name();
  }
}


// Each element of a matmul is summed over k in index order in the set's
// accumulator (long double exact, f32 for emulated f32/bf16, f64 for f64),
// whatever order the kernel walks the operands in: bit for bit.
// Few columns are summed in registers (lane groups of 4 and 1 for 5), more
// side by side: both in order.
TEST(ReferenceKernels, MatmulSumsEachElementInOrderInItsAccumulator) {
  for (const int64_t cols : {5, 11}) {
    const int64_t m = 3, kk = 7;
    Tensor x(DType::f32, {2, m, kk}), y(DType::f32, {1, kk, cols});
    for (int64_t i = 0; i < x.numel(); ++i) x.data[i] = round_to(DType::f32, std::sin(1.7 * i) * std::pow(10.0, i % 5));
    for (int64_t i = 0; i < y.numel(); ++i) y.data[i] = round_to(DType::f32, std::cos(0.3 * i) * std::pow(10.0, -(i % 4)));
    KernelSet emulated = make_reference_kernels("e", Numerics::emulated);
    Tensor exact = run(exact_kernels(), "aten.matmul.default", {x, y}, {}, DType::f32, {2, m, cols});
    Tensor f32 = run(emulated, "aten.matmul.default", {x, y}, {}, DType::f32, {2, m, cols});
    Tensor x64 = x, y64 = y;
    x64.dtype = y64.dtype = DType::f64;
    Tensor f64 = run(emulated, "aten.matmul.default", {x64, y64}, {}, DType::f64, {2, m, cols});
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          long double le = 0;
          float lf = 0;
          double ld = 0;
          for (int64_t t = 0; t < kk; ++t) {
            const double a = x.data[(b * m + i) * kk + t], c = y.data[t * cols + j];
            le += static_cast<long double>(a * c);
            lf += static_cast<float>(a) * static_cast<float>(c);
            ld += a * c;
          }
          const int64_t o = (b * m + i) * cols + j;
          EXPECT_EQ(exact.data[o], static_cast<double>(le)) << o;
          EXPECT_EQ(f32.data[o], round_to(DType::f32, lf)) << o;
          EXPECT_EQ(f64.data[o], ld) << o;
        }
  }
}


// Around the points where exp underflows to 0 (double near -745, float near
// -103.97), softmax weights are exp's own values: 0 past them, subnormal before.
TEST(ReferenceKernels, SoftmaxWeightsFollowExpThroughUnderflow) {
  for (double x : {-700.0, -744.0, -745.1, -745.2, -746.0, -800.0, -static_cast<double>(INFINITY)}) {
    Tensor s = tensor(DType::f64, {1, 2}, {0.0, x});
    Tensor p = run(exact_kernels(), "aten._softmax.default", {s}, {int64_t{-1}, false}, DType::f64, {1, 2});
    EXPECT_EQ(p.data[1], std::exp(x) / (1.0 + std::exp(x))) << x;
  }
  KernelSet emulated = make_reference_kernels("e", Numerics::emulated);
  for (float x : {-87.0f, -103.0f, -103.9f, -104.0f, -104.1f, -150.0f}) {
    Tensor s = tensor(DType::f32, {1, 2}, {0.0, x});
    Tensor p = run(emulated, "aten._softmax.default", {s}, {int64_t{-1}, false}, DType::f32, {1, 2});
    const float w = std::exp(x);
    EXPECT_EQ(p.data[1], static_cast<double>(static_cast<float>(w / (1.0f + w)))) << x;
  }
}

}  // namespace
}  // namespace sdpa
