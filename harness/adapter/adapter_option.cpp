#include "harness/adapter/adapter_option.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

constexpr const char* kPrefix = "adapter:";

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Whether exec would find `program`: a path as it is, a bare name on PATH.
bool runnable(const std::string& program) {
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (access(((dir.empty() ? "." : dir) + "/" + program).c_str(), X_OK) == 0) return true;
  return false;
}

}  // namespace

OptionSpec adapter_timeout_spec() {
  return {"adapter_timeout", {}, "10",
          "seconds one call of an adapter (a run of the pass, a kernel) may take before it is killed (timeout)"};
}

std::vector<OptionSpec> adapter_option_specs() {
  return {{"pass", {}, "model",
           "model: the modeled pass; adapter:COMMAND: run COMMAND (split on spaces, no shell) in its place, "
           "spoken to over stdin and stdout (docs/adapters.md)"},
          adapter_timeout_spec()};
}

AdapterConfig adapter_command(const std::string& value, const std::string& where) {
  if (value.rfind(kPrefix, 0) != 0) throw InputError(where + ": expected adapter:COMMAND, got '" + value + "'");
  AdapterConfig c;
  c.command = value.substr(std::string(kPrefix).size());
  c.argv = split_words(c.command);
  if (c.argv.empty()) throw InputError(where + ": adapter: needs a command (adapter:COMMAND)");
  if (!runnable(c.argv[0]))
    throw InputError(where + ": cannot run '" + c.argv[0] + "': no executable file of that name" +
                     (c.argv[0].find('/') == std::string::npos ? " on PATH" : ""));
  return c;
}

bool names_adapter(const std::string& value) { return value.rfind(kPrefix, 0) == 0; }

double adapter_timeout(const Options& options, const std::string& target, double fallback) {
  auto t = options.find("adapter_timeout");
  if (t == options.end()) return fallback;
  char* end = nullptr;
  const double s = std::strtod(t->second.c_str(), &end);
  if (t->second.empty() || *end != '\0' || !(s > 0) || s > 86400)
    throw InputError("option 'adapter_timeout' of target " + target + ": expected seconds in (0, 86400], got '" +
                     t->second + "'");
  return s;
}

std::optional<AdapterConfig> adapter_config(const Options& options, const std::string& target) {
  auto it = options.find("pass");
  if (it == options.end() || it->second == "model") return std::nullopt;
  const std::string& value = it->second;
  const std::string where = "option 'pass' of target " + target;
  if (!names_adapter(value)) throw InputError(where + ": expected model or adapter:COMMAND, got '" + value + "'");
  AdapterConfig c = adapter_command(value, where);
  c.timeout_s = adapter_timeout(options, target, c.timeout_s);
  return c;
}

std::unique_ptr<Pass> make_adapter_pass(const Options& options, const std::string& target, const std::string& pass) {
  auto config = adapter_config(options, target);
  if (!config) return nullptr;
  return std::make_unique<AdapterPass>(*config, pass, target, options);
}

}  // namespace sdpa
