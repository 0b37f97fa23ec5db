#include "harness/adapter/adapter_pass.h"

#include "harness/adapter/adapter_protocol.h"
#include "harness/adapter/adapter_text.h"

namespace sdpa {

AdapterPass::AdapterPass(AdapterConfig config, std::string pass, std::string target, Options options)
    : config_(std::move(config)),
      pass_(std::move(pass)),
      target_(std::move(target)),
      options_(std::move(options)),
      child_(config_.argv) {}

void AdapterPass::fault(Verdict verdict, const std::string& what) const {
  child_.stop();  // whatever state it is in, the next run starts a new one
  throw PassFault(verdict, "adapter `" + config_.command + "` " + what + stderr_words(child_.stderr_tail()));
}

std::string AdapterPass::exchange(const std::string& line, double timeout_s) const {
  auto reply = child_.call(line, timeout_s, kMaxAdapterLineBytes);
  if (auto* death = std::get_if<WorkerDeath>(&reply)) fault(death->verdict, death->detail);
  return std::get<std::string>(std::move(reply));
}

// Started once per process: a fork (a worker) starts its own adapter on
// its first run, never using the one of the process it was forked from.
void AdapterPass::ensure_started() const {
  if (child_.usable()) return;
  child_.start();
  const std::string line = exchange(one_line(adapter_hello(pass_, target_, options_)), config_.start_timeout_s);
  try {
    read_adapter_hello(line);
  } catch (const PassFault& e) {
    fault(e.verdict, std::string("at its start: ") + e.what());
  }
}

Pass::Result AdapterPass::run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const {
  ensure_started();
  const int64_t id = next_id_++;
  const std::string line = exchange(one_line(adapter_run_request(id, g, env, control)), config_.timeout_s);
  AdapterRunReply reply;
  try {
    reply = read_adapter_run_reply(line, id, g, control);
  } catch (const PassFault& e) {
    fault(e.verdict, e.what());
  }
  if (reply.unsupported) throw PassUnsupported(reply.message);
  if (reply.raised) throw std::runtime_error(reply.message);
  return std::move(reply.result);
}

}  // namespace sdpa
