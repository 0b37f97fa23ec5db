#include "harness/adapter/kernel_adapter.h"

#include "harness/adapter/adapter_protocol.h"
#include "harness/adapter/adapter_text.h"
#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

std::string node_label(const KernelArgs& a) { return "%" + a.node.name + " (" + a.node.op + ")"; }

}  // namespace

KernelAdapter::KernelAdapter(AdapterConfig config, std::string kernel_set, std::string target, Options options,
                             const std::string& where)
    : config_(std::move(config)),
      kernel_set_(std::move(kernel_set)),
      target_(std::move(target)),
      options_(std::move(options)),
      child_(config_.argv) {
  // The declaration decides which dtypes the target claims, so it is read
  // here, before any case is drawn; a process that runs kernels starts its own.
  child_.start();
  auto reply = child_.call(one_line(kernel_hello(kernel_set_, target_, options_)), config_.start_timeout_s,
                           kMaxAdapterLineBytes);
  std::string problem;
  if (auto* death = std::get_if<WorkerDeath>(&reply)) {
    problem = death->detail;
  } else {
    try {
      declared_ = read_kernel_hello(std::get<std::string>(reply));
    } catch (const KernelFault& e) {
      problem = e.what();
    }
  }
  const std::string tail = stderr_words(child_.stderr_tail());
  child_.stop();
  if (!problem.empty())
    throw InputError(where + ": the kernel adapter `" + config_.command + "` at its start: " + problem + tail);
}

void KernelAdapter::fault(Verdict verdict, const std::string& what, const KernelArgs& a) {
  child_.stop();  // whatever state it is in, the next call starts a new one
  throw KernelFault(verdict, "kernel set " + kernel_set_ + ": " + node_label(a) + ": adapter `" + config_.command +
                                 "` " + what + stderr_words(child_.stderr_tail()));
}

std::string KernelAdapter::exchange(const std::string& line, double timeout_s, const KernelArgs& a) {
  auto reply = child_.call(line, timeout_s, kMaxAdapterLineBytes);
  if (auto* death = std::get_if<WorkerDeath>(&reply)) fault(death->verdict, death->detail, a);
  return std::get<std::string>(std::move(reply));
}

// Started once per process: a fork (a worker) starts its own adapter on
// its first call, never using the one of the process it was forked from.
void KernelAdapter::ensure_started(const KernelArgs& a) {
  if (child_.usable()) return;
  child_.start();
  const std::string line =
      exchange(one_line(kernel_hello(kernel_set_, target_, options_)), config_.start_timeout_s, a);
  KernelDeclaration now;
  try {
    now = read_kernel_hello(line);
  } catch (const KernelFault& e) {
    fault(e.verdict, std::string("at its start: ") + e.what(), a);
  }
  // The target claimed dtypes and declared numerics from the first hello.
  if (!same_declaration(now, declared_))
    fault(Verdict::unexpected_error,
          "at its start: declares other ops, dtypes or numerics than at its first start, which the target "
          "claims",
          a);
}

std::vector<Tensor> KernelAdapter::call(const KernelArgs& a) {
  const int64_t id = next_id_++;
  const std::string line = one_line(kernel_request(id, a));
  if (line.size() > kMaxAdapterLineBytes)
    throw KernelError(KernelError::Kind::unsupported,
                      "its request to the kernel adapter is " + std::to_string(line.size()) +
                          " bytes, over the protocol's line limit of " + std::to_string(kMaxAdapterLineBytes));
  ensure_started(a);
  const std::string answer = exchange(line, config_.timeout_s, a);
  KernelReply reply;
  try {
    reply = read_kernel_reply(answer, id, a);
  } catch (const KernelFault& e) {
    fault(e.verdict, e.what(), a);
  }
  if (reply.refused) throw KernelError(*reply.refused, reply.message);
  // An exception the adapter's kernel did not declare, as a kernel of this
  // process throwing one: unexpected-error, and the adapter goes on.
  if (reply.raised) throw std::runtime_error(node_label(a) + ": the kernel adapter raised: " + reply.message);
  return std::move(reply.outputs);
}

KernelSet adapter_kernel_set(const std::shared_ptr<KernelAdapter>& adapter, const std::string& name,
                             const std::vector<std::string>& ops, const KernelSet* base) {
  KernelSet k(name);
  if (base)
    for (const auto& op : base->ops()) k.add(op, *base->find(op));
  for (const auto& op : ops) k.add(op, [adapter](const KernelArgs& a) { return adapter->call(a); });
  return k;
}

NumericsFn adapter_numerics(const KernelDeclaration& d) {
  std::map<DType, FloatNumerics> numerics = d.numerics;
  return [numerics](const Case& c, const Graph&) {
    auto it = numerics.find(c.dtype);
    return it == numerics.end() ? KernelNumerics{} : KernelNumerics::floating(it->second);
  };
}

}  // namespace sdpa
