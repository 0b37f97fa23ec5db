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

/// `pass` (model, or adapter:COMMAND) and `adapter_timeout` (seconds a run may take).
std::vector<OptionSpec> adapter_option_specs();

/// The adapter the options select, or none for the model. Throws InputError
/// naming the option for a value that is neither, an empty command, a
/// program not found, or a timeout that is not a positive number.
std::optional<AdapterConfig> adapter_config(const Options& options, const std::string& target);

/// An AdapterPass in place of the modeled pass named `pass`, or null when
/// the options select the model.
std::unique_ptr<Pass> make_adapter_pass(const Options& options, const std::string& target, const std::string& pass);

}  // namespace sdpa
