#pragma once
/// Prints a graph like torch.fx's Graph.__str__, with dtype and symbolic
/// shape on every value: what an attention engineer reads first on a failure.
#include <string>

#include "harness/ir/graph.h"

namespace sdpa {

std::string print_graph(const Graph& g, const std::string& indent = "");
std::string print_arg(const Graph& g, const Arg& a);
std::string print_value_info(const ValueInfo& v);
/// "%mul_1" or "%native_dropout[1]".
std::string value_name(const Graph& g, ValueRef v);

}  // namespace sdpa
