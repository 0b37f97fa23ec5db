#pragma once
/// How a target opts in to adapters: it adds adapter_option_specs() to its
/// options and builds its pass with make_adapter_pass(). `--option
/// pass=adapter:COMMAND` then runs COMMAND (split on spaces, no shell) in
/// place of the modeled pass; `pass=model` (the default) keeps the model.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/adapter/adapter_pass.h"
#include "harness/check/target.h"

namespace sdpa {

/// `pass` (model, or adapter:COMMAND) and `adapter_timeout` (seconds a call may take).
std::vector<OptionSpec> adapter_option_specs();
/// `adapter_timeout` alone, for a target with a kernel adapter and no pass adapter.
OptionSpec adapter_timeout_spec();

/// Whether an option value names an adapter ("adapter:COMMAND").
bool names_adapter(const std::string& value);
/// The command of "adapter:COMMAND", split on spaces; throws InputError
/// starting with `where` (the option) for another value, an empty command
/// or a program not found.
AdapterConfig adapter_command(const std::string& value, const std::string& where);
/// The `adapter_timeout` option in seconds, `fallback` where it is not
/// given; throws InputError naming it for a value that is not in (0, 86400].
double adapter_timeout(const Options& options, const std::string& target, double fallback);

/// The adapter the options select, or none for the model. Throws InputError
/// naming the option for a value that is neither, an empty command, a
/// program not found, or a timeout that is not a positive number.
std::optional<AdapterConfig> adapter_config(const Options& options, const std::string& target);

/// An AdapterPass in place of the modeled pass named `pass`, or null when
/// the options select the model.
std::unique_ptr<Pass> make_adapter_pass(const Options& options, const std::string& target, const std::string& pass);

}  // namespace sdpa
