#pragma once
/// Boundary classes: named properties of a case that attention kernels and
/// rewrite guards tend to get wrong, counted by the distribution report.
#include <string>
#include <vector>

#include "harness/case/case.h"

namespace sdpa {

/// Every class case c hits, sorted, e.g. "Lq=1", "Lq<Lkv", "Hkv=1",
/// "gqa-group-non-pow2", "E!=Ev", "tile-edge-len", "tile-edge:256",
/// "full-row-mask", "fill:-inf", "scale:tiny", "start_pos>0", "start_pos+Lq>512",
/// "symbols:shared", "symbol:unbacked", "runtime!=hint", "dtype:f16",
/// "mask:block-sparse", "empty-tile:64", "empty-tile:left-padding:1025".
/// Length classes, and the mask classes read from the mask's data (what it
/// keeps, the key tiles it empties), hold when they hold at some runtime size.
std::vector<std::string> boundary_classes(const Case& c);

}  // namespace sdpa
