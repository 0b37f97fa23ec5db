#pragma once
// What the toy-flash adapter tests share: the toy registry with the dual
// oracle, the default generators, an adapter command line for one of the
// Python adapters beside this file, a scratch folder and a line count.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "generators/case_gen.h"
#include "harness/check/toys/toy_targets.h"
#include "oracles/dual_oracle.h"

namespace sdpa::toy_flash::test {

struct Fixture {
  TargetRegistry registry;
  std::unique_ptr<ReferenceModel> reference = make_dual_oracle();
  Fixture() { register_toy_targets(registry); }
};

inline const Fixture& fixture() {
  static const Fixture f;
  return f;
}

inline CaseGeneratorFactory generators() {
  return [](const CaseSpace& s) { return gen_case(GenPolicy::defaults(), s); };
}

/// "adapter:python3 <source>/harness/check/toys/toy_flash/SCRIPT --fault F"
/// (with --starts FILE when given): the option value that runs it.
inline std::string adapter_command(const std::string& script, const std::string& fault,
                                   const std::string& starts_file = "") {
  const char* src = std::getenv("SDPACHECK_SOURCE_DIR");
  std::string cmd = std::string("adapter:/usr/bin/python3 ") + (src ? src : ".") +
                    "/harness/check/toys/toy_flash/" + script + " --fault " + fault;
  return starts_file.empty() ? cmd : cmd + " --starts " + starts_file;
}

/// An empty folder of its own for one test in this process.
inline std::string scratch(const std::string& prefix, const std::string& name) {
  namespace fs = std::filesystem;
  fs::path p = fs::path(testing::TempDir()) / (prefix + "_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

inline int lines_of(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

}  // namespace sdpa::toy_flash::test
