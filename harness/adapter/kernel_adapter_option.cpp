#include "harness/adapter/kernel_adapter_option.h"

#include <algorithm>
#include <sstream>

#include "harness/adapter/adapter_option.h"
#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; std::getline(in, w, ',');)
    if (!w.empty()) out.push_back(w);
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// The ops `adapter_ops` names, each one the adapter declares.
std::vector<std::string> adapted_ops(const Options& options, const std::string& target, const KernelDeclaration& d) {
  auto it = options.find("adapter_ops");
  if (it == options.end() || it->second == "all") return d.ops;
  std::vector<std::string> ops = split_commas(it->second);
  const std::string where = "option 'adapter_ops' of target " + target;
  if (ops.empty()) throw InputError(where + ": expected all or OP,OP,..., got '" + it->second + "'");
  for (const auto& op : ops)
    if (std::find(d.ops.begin(), d.ops.end(), op) == d.ops.end())
      throw InputError(where + ": the kernel adapter does not declare " + op + " (it declares " + joined(d.ops) + ")");
  return ops;
}

// Points into `k`, which the target keeps.
KernelSetInfo declared_info(const AdapterKernels& k) {
  const KernelDeclaration& d = k.adapter->declaration();
  const std::string what = "kernels computed by the adapter `" + k.adapter->config().command + "`" +
                           (d.name.empty() ? "" : " (" + d.name + ")") + ": " + std::to_string(k.adapted.size()) +
                           " of " + std::to_string(k.kernels.ops().size()) + " ops";
  return {&k.kernels, d.dtypes, what, adapter_numerics(d)};
}

}  // namespace

std::vector<OptionSpec> kernel_adapter_option_specs() {
  return {{"adapter_ops", {}, "all",
           "with a kernel adapter: all (every op it declares) or OP,OP,... (those alone; the target's own kernels "
           "compute the others)"}};
}

std::unique_ptr<AdapterKernels> make_adapter_kernels(const Options& options, const std::string& target,
                                                     const std::string& option, const KernelSet* base) {
  auto it = options.find(option);
  if (it == options.end() || !names_adapter(it->second)) return nullptr;
  const std::string where = "option '" + option + "' of target " + target;
  AdapterConfig config = adapter_command(it->second, where);
  config.timeout_s = adapter_timeout(options, target, config.timeout_s);
  auto out = std::make_unique<AdapterKernels>();
  out->adapter = std::make_shared<KernelAdapter>(config, kAdapterKernelSet, target, options, where);
  out->adapted = adapted_ops(options, target, out->adapter->declaration());
  out->kernels = adapter_kernel_set(out->adapter, kAdapterKernelSet, out->adapted, base);
  out->info_ = declared_info(*out);
  return out;
}

}  // namespace sdpa
