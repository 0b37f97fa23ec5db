#include "generators/dynamic_gen.h"

#include <algorithm>

#include "generators/draws.h"
#include "harness/case/case_validate.h"

namespace sdpa {
namespace {

using rc::Gen;
namespace gen = rc::gen;

Gen<SymbolDraw> gen_symbol(const GenPolicy& p) {
  return gen::build<SymbolDraw>(
      gen::set(&SymbolDraw::unbacked, gen_flag(p.p_unbacked)),
      gen::set(&SymbolDraw::min,
               gen_weighted(p.symbol_min_weights, "GenPolicy.symbol_min_weights")),
      gen::set(&SymbolDraw::max,
               gen_weighted(p.symbol_max_weights, "GenPolicy.symbol_max_weights")));
}

Gen<RuntimeDraw> gen_runtime_value(const GenPolicy& p, int64_t max_len) {
  // A distance of 1 gives hint +- 1; max_len is cut to the range's min or max.
  return gen::build<RuntimeDraw>(
      gen::set(&RuntimeDraw::differs, gen_flag(p.p_runtime_differs)),
      gen::set(&RuntimeDraw::below, gen_flag(0.5)),
      gen::set(&RuntimeDraw::distance, gen_size(1, max_len, {1, max_len}, p.p_runtime_boundary)));
}

// A size of the static case that becomes a symbol.
struct SymbolicDim {
  enum Kind { q_len, kv_len, shared_len, batch } kind;
  size_t batch_index;
  int64_t hint;
  int64_t cap;  // bound on its runtime values
};

std::vector<SymbolicDim> symbolic_dims(const DynamicDraw& d, const Case& c, int64_t max_len,
                                       int64_t max_batch) {
  using M = GenPolicy::SymbolMode;
  std::vector<SymbolicDim> dims;
  if (d.mode == M::none) return dims;
  const int64_t Lq = c.q_len.constant(), Lkv = c.kv_len.constant();
  if (d.mode == M::shared) {
    dims.push_back({SymbolicDim::shared_len, 0, Lkv, max_len});  // the drawn Lq is dropped
  } else {
    if (d.q_len.get()) dims.push_back({SymbolicDim::q_len, 0, Lq, max_len});
    if (d.kv_len.get()) dims.push_back({SymbolicDim::kv_len, 0, Lkv, max_len});
  }
  for (size_t i = 0; i < c.batch.size(); ++i)
    if (d.batch[i].get()) dims.push_back({SymbolicDim::batch, i, c.batch[i].constant(), max_batch});
  if (dims.empty()) dims.push_back({SymbolicDim::kv_len, 0, Lkv, max_len});
  return dims;
}

SymbolInfo fit_symbol(const SymbolDraw& d, const GenPolicy& p, int64_t hint, int64_t cap) {
  using X = GenPolicy::SymbolMax;
  SymbolInfo s;
  if (!d.unbacked) s.hint = hint;
  s.min = std::min(d.min, hint);
  const int64_t wide = std::min(std::max(p.wide_symbol_max, cap), SizeLimits{}.max_dim);
  s.max = d.max == X::hint ? hint : d.max == X::cap ? cap : wide;
  return s;
}

// `hint` is the symbol's static size, known even when the symbol is unbacked.
int64_t fit_runtime(const RuntimeDraw& d, const SymbolInfo& s, int64_t hint, int64_t cap) {
  if (!d.differs) return hint;
  const int64_t lo = std::max<int64_t>(s.min, 1), hi = std::min(s.max, cap);
  return std::clamp(d.below ? hint - d.distance : hint + d.distance, lo, hi);
}

}  // namespace

Gen<DynamicDraw> gen_dynamic(const GenPolicy& p, const CaseSpace& space, size_t max_batch_rank,
                             int64_t max_len) {
  const size_t slots = 2 + max_batch_rank;
  const auto entries =
      static_cast<size_t>(std::clamp<int64_t>(p.max_runtime_entries, 1, SizeLimits{}.max_runs));
  using M = GenPolicy::SymbolMode;
  Weighted<M> modes = p.symbol_mode_weights;
  if (!space.dynamic_dims) modes = {{M::none, 1.0}};
  Gen<std::vector<Lazy<RuntimeDraw>>> entry =
      gen_each(std::vector<Gen<Lazy<RuntimeDraw>>>(slots, gen_lazy(gen_runtime_value(p, max_len))));
  return gen::build<DynamicDraw>(
      gen::set(&DynamicDraw::mode, gen_weighted(modes, "GenPolicy.symbol_mode_weights")),
      gen::set(&DynamicDraw::q_len, gen_lazy(gen_flag(p.p_len_symbolic))),
      gen::set(&DynamicDraw::kv_len, gen_lazy(gen_flag(p.p_len_symbolic))),
      gen::set(&DynamicDraw::batch,
               gen_each(std::vector<Gen<Lazy<bool>>>(max_batch_rank, gen_lazy(gen_flag(p.p_batch_symbolic))))),
      gen::set(&DynamicDraw::symbols,
               gen_each(std::vector<Gen<Lazy<SymbolDraw>>>(slots, gen_lazy(gen_symbol(p))))),
      gen::set(&DynamicDraw::entries, gen_lazy(gen::map(gen_size(1, static_cast<int64_t>(entries)),
                                                        [](int64_t n) { return static_cast<size_t>(n); }))),
      gen::set(&DynamicDraw::runtime,
               gen_each(std::vector<Gen<Lazy<std::vector<Lazy<RuntimeDraw>>>>>(entries, gen_lazy(entry)))));
}

void apply_dynamic(const DynamicDraw& d, const GenPolicy& p, int64_t max_len, int64_t max_batch,
                   Case& c) {
  const std::vector<SymbolicDim> dims = symbolic_dims(d, c, max_len, max_batch);
  if (dims.empty()) return;
  c.runtime.assign(d.entries.get(), Assignment{});
  for (size_t i = 0; i < dims.size(); ++i) {
    const SymbolicDim& dim = dims[i];
    const std::string name = "s" + std::to_string(i);
    const SymExpr s = SymExpr::symbol(name);
    switch (dim.kind) {
      case SymbolicDim::q_len: c.q_len = s; break;
      case SymbolicDim::kv_len: c.kv_len = s; break;
      case SymbolicDim::shared_len: c.q_len = c.kv_len = s; break;
      case SymbolicDim::batch: c.batch[dim.batch_index] = s; break;
    }
    const SymbolInfo info = fit_symbol(d.symbols[i].get(), p, dim.hint, dim.cap);
    c.symbols[name] = info;
    for (size_t e = 0; e < d.entries.get(); ++e)
      c.runtime[e][name] = fit_runtime(d.runtime[e].get()[i].get(), info, dim.hint, dim.cap);
  }
}

}  // namespace sdpa
