#include "generators/scalar_gen.h"

#include <algorithm>
#include <limits>

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
  return gen::build<StartPosDraw>(
      gen::set(&StartPosDraw::positive, gen_flag(space.start_pos ? p.p_start_pos : 0.0)),
      gen::set(&StartPosDraw::offset, gen_size(1, max_len, {max_len}, p.p_start_pos_bottom_right)));
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
  return std::min(d.offset, room);
}

Gen<DataSpec> gen_data(const GenPolicy& p) {
  return gen::build<DataSpec>(
      gen::set(&DataSpec::seed, gen_seed()),
      gen::set(&DataSpec::distribution,
               gen_weighted(p.distribution_weights, "GenPolicy.distribution_weights")),
      gen::set(&DataSpec::magnitude,
               gen_weighted(p.magnitude_weights, "GenPolicy.magnitude_weights")));
}

}  // namespace sdpa
