#include "harness/check/target.h"

#include "harness/io/json_reader.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa {

std::map<std::string, Tensor> Target::inputs(const Case& c, const CaseTensors& t) const {
  std::map<std::string, Tensor> in{{"q", t.q}, {"k", t.k}, {"v", t.v}};
  if (t.mask) in["attn_mask"] = *t.mask;
  return in;
}

const KernelSet& Target::exact_kernels() const { return sdpa::exact_kernels(); }

std::string Target::failure_class(const Case& c) const {
  std::string cls;
  for (const auto& f : failure_facts(c)) cls += (cls.empty() ? "" : "+") + f.rule;
  return cls;
}

void TargetRegistry::add(std::unique_ptr<TargetFactory> f) { factories_.push_back(std::move(f)); }

const TargetFactory* TargetRegistry::find(const std::string& name) const {
  for (const auto& f : factories_)
    if (f->name() == name) return f.get();
  return nullptr;
}

std::vector<const TargetFactory*> TargetRegistry::all() const {
  std::vector<const TargetFactory*> out;
  for (const auto& f : factories_) out.push_back(f.get());
  return out;
}

namespace {
std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}
}  // namespace

Options resolve_options(const TargetFactory& f, const Options& given) {
  Options out;
  std::vector<std::string> known;
  const std::vector<OptionSpec> specs = f.option_specs();
  for (const auto& spec : specs) {
    known.push_back(spec.name);
    out[spec.name] = spec.default_value;
  }
  for (const auto& [key, value] : given) {
    const OptionSpec* spec = nullptr;
    for (const auto& s : specs)
      if (s.name == key) spec = &s;
    if (!spec)
      throw InputError("option '" + key + "' is not an option of target " + f.name() +
                       " (expected one of: " + join(known) + ")");
    bool ok = spec->choices.empty();
    for (const auto& c : spec->choices) ok = ok || c == value;
    if (!ok)
      throw InputError("option '" + key + "' of target " + f.name() + ": expected one of " +
                       join(spec->choices) + ", got '" + value + "'");
    out[key] = value;
  }
  return out;
}

std::unique_ptr<Target> TargetRegistry::make(const std::string& name, const Options& options) const {
  const TargetFactory* f = find(name);
  if (!f) {
    std::vector<std::string> names;
    for (const auto& x : factories_) names.push_back(x->name());
    throw InputError("unknown target '" + name + "' (expected one of: " + join(names) + ")");
  }
  return f->make(resolve_options(*f, options));
}

}  // namespace sdpa
