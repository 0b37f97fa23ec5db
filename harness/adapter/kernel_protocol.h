#pragma once
/// The kernel messages of the adapter protocol (docs/adapters.md, version
/// 1, kind "kernel"): sdpacheck's hello names the kernel set and the
/// target; the adapter answers with its declaration (the ops it computes,
/// the dtypes it claims, its numerics for each); then one `kernel` request
/// per node the set computes (the op, its arguments resolved at this run:
/// tensors with their data, sizes as integers; the outputs the node
/// declares at this run's sizes; the run's data seed), answered with the
/// output tensors, or with a refusal. A reply the protocol does not allow
/// (not JSON, another type or id, a field missing or unknown, an output
/// unlike the node's declaration) throws KernelFault (unexpected-error),
/// naming the field.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/check/kernel_fault.h"
#include "harness/check/numerics.h"
#include "harness/check/target.h"
#include "harness/ir/kernel_set.h"

namespace sdpa {

/// Bounds on an adapter's hello, checked before anything is kept.
inline constexpr size_t kMaxAdapterOps = 4096;

/// What a kernel adapter says it is in its hello.
struct KernelDeclaration {
  std::string name;               // its own name, for messages ("" when it gives none)
  std::vector<std::string> ops;   // the ops it computes, as sdpacheck names them
  std::vector<DType> dtypes;      // the case dtypes it claims
  std::map<DType, FloatNumerics> numerics;  // how it computes a case of each (absent: no bound)
};
/// Same ops, dtypes and numerics (the name aside).
bool same_declaration(const KernelDeclaration& a, const KernelDeclaration& b);

nlohmann::json kernel_hello(const std::string& kernel_set, const std::string& target, const Options& options);
/// The adapter's hello reply, read strictly (KernelFault unexpected-error).
KernelDeclaration read_kernel_hello(const std::string& line);

/// The request for one node: its arguments as the kernel gets them.
nlohmann::json kernel_request(int64_t id, const KernelArgs& a);

/// What a kernel reply holds: the outputs, or the refusal (`refused`) or
/// undeclared exception (`raised`) of the adapter's kernel, with its message.
struct KernelReply {
  std::vector<Tensor> outputs;
  std::optional<KernelError::Kind> refused;
  bool raised = false;
  std::string message;
};
/// Reads the reply to request `id` for the node of `a`: each output must
/// have the dtype and shape the node declares at this run's sizes (checked
/// before its data is read) and hold values of its dtype; it gets the
/// node's declared qparams.
KernelReply read_kernel_reply(const std::string& line, int64_t id, const KernelArgs& a);

}  // namespace sdpa
