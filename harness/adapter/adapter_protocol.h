#pragma once
/// The messages of the adapter protocol (docs/adapters.md), version 1:
/// one JSON object a line over the adapter's stdin and stdout. sdpacheck
/// sends `hello`, then a `run` per pass call (the graph in its JSON form,
/// the shape environment, the rewrite control); the adapter answers each
/// with the rewritten graph and its decisions, or with the error its pass
/// raised. A reply the protocol does not allow throws PassFault: a
/// malformed one unexpected-error, a wrong graph or wrong decisions
/// invalid-rewrite.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/check/pass_fault.h"
#include "harness/check/target.h"
#include "harness/io/json_reader.h"

namespace sdpa {

inline constexpr int kAdapterProtocolVersion = 1;
/// The longest line either side may write.
inline constexpr size_t kMaxAdapterLineBytes = kMaxJsonFileBytes;

nlohmann::json adapter_hello(const std::string& pass, const std::string& target, const Options& options);
/// The adapter's name from its hello reply ("" when it gives none).
std::string read_adapter_hello(const std::string& line);

/// The checks every hello reply shares: "type" is "hello" (else an
/// InputError naming the field); returns the version mismatch in words, or
/// "" when the adapter speaks this version.
std::string hello_version_mismatch(JsonObject& hello);

nlohmann::json adapter_run_request(int64_t id, const Graph& g, const ShapeEnv& env, const RewriteControl& control);

/// What a run reply holds: the pass's result, or the error it raised
/// (`unsupported`: the pass refuses the form, as PassUnsupported).
struct AdapterRunReply {
  bool raised = false;
  bool unsupported = false;
  std::string message;
  Pass::Result result;
};
/// Reads the reply to run request `id` that sent `sent` under `control`:
/// the graph read strictly and verified, every decision naming a node of
/// `sent` ("%name") and the graph honouring `control` (a rewritten node
/// gone, a kept one still there with its op). Decision::forced is set
/// here from `control`, not taken from the adapter.
AdapterRunReply read_adapter_run_reply(const std::string& line, int64_t id, const Graph& sent,
                                       const RewriteControl& control);

nlohmann::json decision_to_json(const Decision& d);

}  // namespace sdpa
