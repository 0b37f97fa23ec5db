#include "generators/scalar_gen.h"

#include <algorithm>
#include <limits>
#include <set>

#include "generators/draws.h"

namespace sdpa {

using rc::Gen;
namespace gen = rc::gen;

Gen<std::optional<double>> gen_scale(const GenPolicy& p) {
  using K = GenPolicy::ScaleKind;
  return gen::apply(
      [tiny = p.tiny_scale, huge = p.huge_scale](K kind, double ordinary) -> std::optional<double> {
        switch (kind) {
          case K::none: return std::nullopt;
          case K::ordinary: return ordinary;
          case K::negative: return -ordinary;
          case K::zero: return 0.0;
          case K::tiny: return tiny;
          case K::huge: break;
        }
        return huge;
      },
      gen_weighted(p.scale_weights, "GenPolicy.scale_weights"),
      gen_weighted(p.ordinary_scales, "GenPolicy.ordinary_scales"));
}

Gen<double> gen_dropout(const GenPolicy& p, const CaseSpace& space) {
  if (!space.dropout) return gen::just(0.0);
  return gen::apply([](bool on, double v) { return on ? v : 0.0; }, gen_flag(p.p_dropout),
                    gen_weighted(p.dropout_weights, "GenPolicy.dropout_weights"));
}

Gen<StartPosDraw> gen_start_pos(const GenPolicy& p, const CaseSpace& space, int64_t max_len) {
  // The KV-cache draws are constant outside a KV-cache space, so that the
  // other spaces' cases and shrinks stay what they were.
  const bool kv = space.kv_cache;
  const size_t edges = p.cache_block_edges.size();
  return gen::build<StartPosDraw>(
      gen::set(&StartPosDraw::positive, gen_flag(space.start_pos ? p.p_start_pos : 0.0)),
      gen::set(&StartPosDraw::offset, gen_lazy(gen_size(1, max_len, {max_len}, p.p_start_pos_bottom_right))),
      gen::set(&StartPosDraw::cache, gen_flag(space.start_pos ? p.p_cache_kv_len : 0.0)),
      gen::set(&StartPosDraw::unbacked, gen_lazy(gen_flag(p.p_unbacked))),
      gen::set(&StartPosDraw::other, gen_lazy(gen_size(0, max_len))),
      gen::set(&StartPosDraw::block_edge, kv && edges > 0 ? gen_flag(p.p_cache_block_edge) : gen::just(false)),
      gen::set(&StartPosDraw::edge, kv && edges > 1 ? gen::inRange<size_t>(0, edges) : gen::just<size_t>(0)),
      gen::set(&StartPosDraw::edge_back, kv ? gen_size(0, max_len) : gen::just<int64_t>(0)),
      gen::set(&StartPosDraw::context_range,
               kv ? gen_flag(p.p_start_pos_context_range) : gen::just(false)));
}

namespace {

// Drops the symbols of `old` that no size of c uses any more, with their
// runtime values.
void drop_symbols_of(const SymExpr& old, Case& c) {
  std::set<std::string> used = c.kv_len.symbols();
  for (const auto& s : c.q_len.symbols()) used.insert(s);
  for (const auto& s : c.start_pos.symbols()) used.insert(s);
  for (const auto& d : c.batch)
    for (const auto& s : d.symbols()) used.insert(s);
  for (const auto& s : old.symbols())
    if (!used.count(s)) {
      c.symbols.erase(s);
      for (auto& at : c.runtime) at.erase(s);
    }
}

}  // namespace

void apply_kv_cache(const StartPosDraw& d, const GenPolicy& p, int64_t max_len, int64_t max_elements, Case& c) {
  // The largest Lq and drawn Lkv of the runs, and the most score rows
  // [batch..., Hq, Lq] of a run: the cache holds Lq past the drawn length,
  // within the score budget.
  int64_t q_max = 0, drawn = 1, rows = 1;
  for (const auto& at : c.runs()) {
    const ConcreteSizes s = concrete_sizes(c, at);
    q_max = std::max(q_max, s.Lq);
    drawn = std::max(drawn, s.Lkv);
    rows = std::max(rows, s.batch_numel() * s.Hq * std::max<int64_t>(1, s.Lq));
  }
  // Within the budget for the scores and for a [Lkv, Lkv] tensor (the
  // causal mask buffer of a llama attention).
  int64_t root = 1;
  while ((root + 1) * (root + 1) <= max_elements) ++root;
  const int64_t longest = std::min(max_elements / rows, root);
  // Room for Lq's whole declared range where it is within the length cap
  // and the budget, so that sp + Lq <= Lkv holds at every size; else for
  // its runs only.
  const int64_t q_declared = std::max(q_max, c.shape_env().range(c.q_len).second);
  const int64_t q_room = q_declared <= max_len && q_declared + drawn <= longest ? q_declared : q_max;
  int64_t cache = std::max(q_max, std::min(q_room + drawn, longest)), at_edge = -1;
  if (d.block_edge && !p.cache_block_edges.empty()) {
    const int64_t edge = p.cache_block_edges[d.edge % p.cache_block_edges.size()];
    const int64_t longer = edge + q_room + drawn - 1;
    // From edge - Lq (the last query reads key edge - 1: one full block)
    // to edge (every query past it); shrinks toward edge.
    if (longer <= longest) cache = longer, at_edge = std::max<int64_t>(0, edge - d.edge_back % (q_max + 1));
  }
  const int64_t room = std::max<int64_t>(0, cache - q_room);
  // The first run past position 0 wherever the cache leaves room (a step
  // that needs it stays one as the edge shrinks away); the second from 0.
  const int64_t first = at_edge >= 0 ? at_edge : std::min(d.offset.get(), room);
  const int64_t second = std::min(d.other.get(), room);
  SymbolInfo sp;
  if (!d.unbacked.get()) sp.hint = first;
  sp.min = 0;
  sp.max = d.context_range ? std::max(room, cache - 1) : room;
  c.symbols["sp"] = sp;
  if (c.runtime.empty()) c.runtime.assign(second != first ? 2 : 1, Assignment{});
  for (size_t e = 0; e < c.runtime.size(); ++e) c.runtime[e]["sp"] = e % 2 == 0 ? first : second;
  c.start_pos = SymExpr::symbol("sp");
  const SymExpr old_kv_len = c.kv_len;
  c.kv_len = cache;
  drop_symbols_of(old_kv_len, c);
}

bool apply_cache_position(const StartPosDraw& d, int64_t max_len, Case& c) {
  if (!d.positive || !d.cache) return false;
  int64_t longest_q = 1;
  for (const auto& at : c.runs()) longest_q = std::max(longest_q, c.q_len.eval(at));
  const int64_t max_sp = max_len - longest_q;
  if (max_sp < 1) return false;
  const int64_t hint = std::min(d.offset.get(), max_sp);
  SymbolInfo sp;
  if (!d.unbacked.get()) sp.hint = hint;
  sp.min = 0;
  sp.max = max_sp;
  c.symbols["sp"] = sp;
  if (c.runtime.empty()) c.runtime.assign(d.other.get() != hint ? 2 : 1, Assignment{});
  for (size_t e = 0; e < c.runtime.size(); ++e)
    c.runtime[e]["sp"] = e % 2 == 0 ? hint : std::min(d.other.get(), max_sp);
  c.start_pos = SymExpr::symbol("sp");
  const SymExpr old_kv_len = c.kv_len;
  c.kv_len = c.start_pos + c.q_len;
  // A symbol that only named the old Lkv is no longer used.
  drop_symbols_of(old_kv_len, c);
  return true;
}

SymExpr start_pos_for(const StartPosDraw& d, const Case& c) {
  if (!d.positive) return 0;
  std::vector<Assignment> points = c.runs();
  if (auto hints = c.shape_env().hints()) points.push_back(*hints);
  int64_t room = std::numeric_limits<int64_t>::max();
  for (const auto& at : points) {
    ConcreteSizes s = concrete_sizes(c, at);
    room = std::min(room, s.Lkv - s.Lq);
  }
  if (room < 1) return 0;
  return std::min(d.offset.get(), room);
}

Gen<std::optional<SpecialData>> gen_special(const GenPolicy& p, const CaseSpace& space) {
  if (!space.non_finite) return gen::just(std::optional<SpecialData>());
  Gen<SpecialData> special = gen::build<SpecialData>(
      gen::set(&SpecialData::value, gen_weighted(p.special_value_weights, "GenPolicy.special_value_weights")),
      gen::set(&SpecialData::tensor, gen_weighted(p.special_tensor_weights, "GenPolicy.special_tensor_weights")),
      gen::set(&SpecialData::place, gen_weighted(p.special_place_weights, "GenPolicy.special_place_weights")),
      gen::set(&SpecialData::count, gen_weighted(p.special_count_weights, "GenPolicy.special_count_weights")));
  // The special value's draw is made only where the flag is on (gen_lazy).
  return gen::apply(
      [](bool on, const Lazy<SpecialData>& s) { return on ? std::optional<SpecialData>(s.get()) : std::nullopt; },
      gen_flag(p.p_special), gen_lazy(special));
}

Gen<DataSpec> gen_data(const GenPolicy& p, const CaseSpace& space) {
  return gen::build<DataSpec>(
      gen::set(&DataSpec::seed, gen_seed()),
      gen::set(&DataSpec::distribution,
               gen_weighted(p.distribution_weights, "GenPolicy.distribution_weights")),
      gen::set(&DataSpec::magnitude,
               gen_weighted(p.magnitude_weights, "GenPolicy.magnitude_weights")),
      gen::set(&DataSpec::special, gen_special(p, space)));
}

}  // namespace sdpa
