#pragma once
/// Generators for dynamic dims: which sizes become symbols, their ranges and
/// hints, and the runtime sizes the exported graph runs at. The draw does not
/// depend on the case's sizes (so it shrinks on its own); apply_dynamic fits
/// it to a static case.
#include <rapidcheck.h>

#include <cstdint>
#include <vector>

#include "generators/gen_policy.h"
#include "generators/lazy_draw.h"
#include "harness/case/case.h"
#include "harness/case/case_space.h"

namespace sdpa {

/// A symbol's range, before it is fitted to its hint.
struct SymbolDraw {
  bool unbacked = false;
  int64_t min = 1;  // lowered to the hint
  GenPolicy::SymbolMax max = GenPolicy::SymbolMax::cap;
};

/// One runtime value of one symbol: its static size (the hint), or that
/// size moved by `distance`, cut into [max(min, 1), min(max, cap)]. Relative
/// to the static size so that it shrinks back toward it.
struct RuntimeDraw {
  bool differs = false;
  bool below = false;
  int64_t distance = 1;
};

struct DynamicDraw {
  GenPolicy::SymbolMode mode = GenPolicy::SymbolMode::none;
  // Drawn when read (gen_lazy): mode none reads none of these, a dynamic
  // case the slots of its symbols and its entries only.
  Lazy<bool> q_len;                       // independent mode: Lq a symbol
  Lazy<bool> kv_len;                      // independent mode: Lkv a symbol
  std::vector<Lazy<bool>> batch;          // each batch dim a symbol (not in mode none)
  std::vector<Lazy<SymbolDraw>> symbols;  // one a symbol slot, in order s0, s1, ...
  Lazy<size_t> entries;                   // runtime assignments
  std::vector<Lazy<std::vector<Lazy<RuntimeDraw>>>> runtime;  // [entry][symbol slot]
};

/// Symbols only when space.dynamic_dims; slots for Lq, Lkv and
/// max_batch_rank batch dims; 1 to p.max_runtime_entries entries, distances
/// in [1, max_len]. Shrinks toward mode none, one entry at the hints.
rc::Gen<DynamicDraw> gen_dynamic(const GenPolicy& p, const CaseSpace& space, size_t max_batch_rank,
                                 int64_t max_len);

/// Turns the sizes of static case c that draw d picks into symbols s0, s1,
/// ... (hinted at c's sizes; shared mode gives Lq and Lkv one symbol hinted at
/// Lkv) and sets c.runtime. Runtime lengths stay <= max_len and runtime batch
/// sizes <= max_batch.
void apply_dynamic(const DynamicDraw& d, const GenPolicy& p, int64_t max_len, int64_t max_batch,
                   Case& c);

}  // namespace sdpa
