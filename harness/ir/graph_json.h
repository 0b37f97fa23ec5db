#pragma once
/// The JSON form of a graph and of a shape environment: what sdpacheck
/// sends a pass that runs in another process (docs/adapters.md) and reads
/// back. Reading is strict (InputError naming the field, limits checked
/// before anything is allocated); writing then reading gives the same graph.
///
///   graph: {"nodes": [node...], "outputs": [ref...], "constants": {name: tensor}}
///   node:  {"name", "op", "args": [arg...], "kwargs": [[key, arg]...],
///           "outputs": [{"dtype", "shape", "qparams"?}...], "subgraphs": [graph...]}
///   arg:   null | true | false | an integer (int64) | a number with a point or
///          exponent (double) | {"float": "inf" | "-inf" | "nan"} |
///          {"ref": NAME, "output": I} | {"str": S} | {"sym": SIZE} |
///          {"shape": [SIZE...]} | {"dtype": NAME}
///   size:  an integer or an expression ("s0 + 1")
/// A ref names a node defined earlier (in the same graph) and one of its
/// outputs ("output" may be left out for 0).
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/ir/graph.h"
#include "harness/ir/shape_env.h"

namespace sdpa {

/// Bounds on a graph read from JSON, besides the text bounds of json_reader.h.
inline constexpr size_t kMaxGraphNodes = 100000;
inline constexpr size_t kMaxNodeArgs = 256;       // args, kwargs or outputs of one node
inline constexpr size_t kMaxNameBytes = 1024;     // node names, ops, kwarg keys
inline constexpr int kMaxSubgraphDepth = 8;
inline constexpr int64_t kMaxConstantElements = int64_t{1} << 22;

nlohmann::json graph_to_json(const Graph& g);
/// `path` names the graph in messages ("reply.graph"). Throws InputError.
Graph graph_from_json(const nlohmann::json& j, const std::string& path);

nlohmann::json shape_env_to_json(const ShapeEnv& env);
ShapeEnv shape_env_from_json(const nlohmann::json& j, const std::string& path);

/// A tensor as a graph constant is written: {"dtype", "shape": [int...],
/// "data": [number | "inf" | "-inf" | "nan"...], "qparams"?}; doubles exact.
nlohmann::json tensor_to_json(const Tensor& t);
/// A double as an argument is written: a number, or {"float": "inf" | "-inf" | "nan"}.
nlohmann::json double_to_json(double d);

/// A size as written in the graph form: an integer, or the expression text.
nlohmann::json sym_to_json(const SymExpr& e);
SymExpr sym_from_json(const nlohmann::json& v, const std::string& field);

}  // namespace sdpa
