// The node memo: graphs run on one memo reuse the results of nodes that
// match by op, arguments (tensors by content) and declared outputs, and give
// the results the plain interpreter gives.
#include "harness/ir/node_memo.h"

#include <gtest/gtest.h>

#include "harness/ir/interpreter.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa {
namespace {

Tensor vec(std::vector<double> v) {
  Tensor x(DType::f32, {static_cast<int64_t>(v.size())});
  x.data = std::move(v);
  return x;
}

// The exact kernels, each counting its calls.
struct Counting {
  KernelSet k{"counting"};
  std::shared_ptr<int> calls = std::make_shared<int>(0);
  Counting() {
    const KernelSet& exact = exact_kernels();
    for (const auto& op : exact.ops()) {
      KernelFn f = *exact.find(op);
      k.add(op, [f, c = calls](const KernelArgs& a) {
        ++*c;
        return f(a);
      });
    }
  }
};

const SymShape kTwo{SymExpr(2)};

// x -> first(x) -> square -> mul by 3: `first` is x * 2 or x + x (equal values).
Graph chain(bool twice_by_add, double last = 3.0) {
  Graph g;
  ValueRef x = g.placeholder("x", {DType::f32, kTwo});
  ValueRef y = twice_by_add ? g.call("aten.add.Tensor", {x, x}, {}, {{DType::f32, kTwo}})
                            : g.call("aten.mul.Scalar", {x, 2.0}, {}, {{DType::f32, kTwo}});
  ValueRef e = g.call("aten.mul.Tensor", {y, y}, {}, {{DType::f32, kTwo}});
  g.outputs = {g.call("aten.mul.Scalar", {e, last}, {}, {{DType::f32, kTwo}})};
  return g;
}

TEST(NodeMemo, ASecondRunOfTheSameGraphCallsNoKernel) {
  Counting c;
  int64_t budget = 1 << 20;
  NodeMemo memo(c.k, {}, &budget);
  const std::map<std::string, Tensor> in{{"x", vec({0.5, -1.0})}};
  const Tensor plain = interpret(chain(false), c.k, in, {}).outputs[0];
  *c.calls = 0;
  EXPECT_EQ(interpret(chain(false), c.k, in, {}, memo).outputs[0].data, plain.data);
  EXPECT_EQ(*c.calls, 3);
  EXPECT_EQ(interpret(chain(false), c.k, in, {}, memo).outputs[0].data, plain.data);
  EXPECT_EQ(*c.calls, 3) << "every node found in the memo";
  EXPECT_EQ(memo.hits(), 3);
}

TEST(NodeMemo, NodesDownstreamOfAnEqualValueAreReused) {
  Counting c;
  int64_t budget = 1 << 20;
  NodeMemo memo(c.k, {}, &budget);
  const std::map<std::string, Tensor> in{{"x", vec({0.5, -1.0})}};
  interpret(chain(false), c.k, in, {}, memo);
  *c.calls = 0;
  const Tensor got = interpret(chain(true), c.k, in, {}, memo).outputs[0];
  EXPECT_EQ(*c.calls, 1) << "only the add runs: x + x equals x * 2, so the square and the last mul are found";
  EXPECT_EQ(got.data, interpret(chain(true), exact_kernels(), in, {}).outputs[0].data);
}

TEST(NodeMemo, ADifferentArgumentOrInputRunsTheKernel) {
  Counting c;
  int64_t budget = 1 << 20;
  NodeMemo memo(c.k, {}, &budget);
  const std::map<std::string, Tensor> in{{"x", vec({0.5, -1.0})}};
  interpret(chain(false), c.k, in, {}, memo);
  *c.calls = 0;
  const Tensor four = interpret(chain(false, 4.0), c.k, in, {}, memo).outputs[0];
  EXPECT_EQ(*c.calls, 1) << "the last mul has another literal";
  EXPECT_EQ(four.data, interpret(chain(false, 4.0), exact_kernels(), in, {}).outputs[0].data);
  *c.calls = 0;
  // -0.0 and 0.0 are equal numbers but not the same bits: kept apart.
  const std::map<std::string, Tensor> zero{{"x", vec({0.0, 1.0})}}, minus_zero{{"x", vec({-0.0, 1.0})}};
  interpret(chain(false), c.k, zero, {}, memo);
  EXPECT_EQ(*c.calls, 3);
  const Tensor m = interpret(chain(false), c.k, minus_zero, {}, memo).outputs[0];
  EXPECT_EQ(*c.calls, 5) << "x * 2 is new (-0.0); its square is +0.0 as before, so the last mul is found";
  EXPECT_EQ(m.data, interpret(chain(false), exact_kernels(), minus_zero, {}).outputs[0].data);
}

TEST(NodeMemo, PastItsBudgetTheMemoStoresNothingAndResultsAreTheSame) {
  Counting c;
  int64_t budget = 0;
  NodeMemo memo(c.k, {}, &budget);
  const std::map<std::string, Tensor> in{{"x", vec({0.5, -1.0})}};
  const Tensor a = interpret(chain(false), c.k, in, {}, memo).outputs[0];
  const Tensor b = interpret(chain(false), c.k, in, {}, memo).outputs[0];
  EXPECT_EQ(*c.calls, 6);
  EXPECT_EQ(memo.hits(), 0);
  EXPECT_EQ(memo.elements(), 0);
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(a.data, interpret(chain(false), exact_kernels(), in, {}).outputs[0].data);
}

// A value whose buffer is larger than its elements (a slice cut from a
// cache) is kept at its own size, and admitted by the storage it holds: the
// budget bounds the memory the memo keeps, not only the element count.
TEST(NodeMemo, AValueCutFromALargerBufferIsKeptAtItsOwnSize) {
  Counting c;
  int64_t budget = 100;
  NodeMemo memo(c.k, {}, &budget);
  Tensor cut = vec({1.0, 2.0});
  cut.data.reserve(64);
  ASSERT_GE(cut.data.capacity(), 64u);
  const std::optional<int> id = memo.intern(std::move(cut));
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(memo.value(*id).data.capacity(), 2u);
  EXPECT_EQ(memo.elements(), 2);
  EXPECT_EQ(budget, 98);
  Tensor wide = vec({3.0, 4.0});
  wide.data.reserve(1000);
  EXPECT_FALSE(memo.intern(std::move(wide)).has_value()) << "1,000 doubles of storage do not fit in 98";
  EXPECT_EQ(memo.elements(), 2);
}

TEST(NodeMemo, AFailingNodeFailsAgain) {
  Counting c;
  int64_t budget = 1 << 20;
  NodeMemo memo(c.k, {}, &budget);
  Graph g;
  ValueRef x = g.placeholder("x", {DType::f32, kTwo});
  g.outputs = {g.call("aten.mul.Scalar", {x, 2.0}, {}, {{DType::f32, {SymExpr(3)}}})};  // declares a wrong shape
  const std::map<std::string, Tensor> in{{"x", vec({0.5, -1.0})}};
  EXPECT_THROW(interpret(g, c.k, in, {}, memo), GraphError);
  EXPECT_THROW(interpret(g, c.k, in, {}, memo), GraphError);
}

TEST(NodeMemo, RefusesAnotherContextOrKernelSet) {
  Counting c;
  int64_t budget = 1 << 20;
  NodeMemo memo(c.k, RunContext{{}, 1}, &budget);
  const std::map<std::string, Tensor> in{{"x", vec({0.5, -1.0})}};
  EXPECT_THROW(interpret(chain(false), c.k, in, RunContext{{}, 2}, memo), std::logic_error);
  EXPECT_THROW(interpret(chain(false), exact_kernels(), in, RunContext{{}, 1}, memo), std::logic_error);
  EXPECT_NO_THROW(interpret(chain(false), c.k, in, RunContext{{}, 1}, memo));
}

}  // namespace
}  // namespace sdpa
