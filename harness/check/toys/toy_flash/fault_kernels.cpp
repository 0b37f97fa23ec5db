#include "harness/check/toys/toy_flash/fault_kernels.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sdpa::toy_flash {
namespace {

// Allocations the alloc fault keeps reachable, so none can be elided.
std::vector<char*>& kept() {
  static std::vector<char*> blocks;
  return blocks;
}

// segfault-once: true the first time in any process, which leaves the
// file $TOY_FLASH_ONCE_FILE behind; false after (and without the variable).
bool first_time() {
  const char* path = std::getenv("TOY_FLASH_ONCE_FILE");
  if (!path) return false;
  if (std::FILE* f = std::fopen(path, "r")) {
    std::fclose(f);
    return false;
  }
  if (std::FILE* f = std::fopen(path, "w")) std::fclose(f);
  return true;
}

[[noreturn]] void commit(const std::string& fault) {
  if (fault == "segfault" || fault == "segfault-once") {
    int* volatile p = nullptr;  // volatile: the store is made, not folded into a trap
    *p = 1;
  }
  if (fault == "hang")
    for (volatile uint64_t i = 0;; i = i + 1) {
    }
  if (fault == "alloc")
    for (;;) {
      constexpr size_t kBlock = 16 << 20;
      char* block = new char[kBlock];
      std::memset(block, 1, kBlock);  // resident, not only reserved
      kept().push_back(block);
    }
  std::abort();
}

}  // namespace

std::vector<std::string> fault_names() { return {"none", "segfault", "abort", "hang", "alloc", "segfault-once"}; }

void add_fault(KernelSet& kernels, const std::vector<std::string>& ops, const std::string& fault) {
  if (fault == "none") return;
  for (const auto& op : ops) {
    KernelFn inner = *kernels.find(op);
    kernels.add(op, [inner, fault](const KernelArgs& a) {
      const Shape& q = a.tensor(0).shape;
      if (q.size() >= 2 && q[q.size() - 2] >= kFaultLq && (fault != "segfault-once" || first_time())) commit(fault);
      return inner(a);
    });
  }
}

}  // namespace sdpa::toy_flash
