// Counts the process's C++ allocations (operator new and new[]; not malloc,
// so not LibTorch's tensor storage, which c10 takes with posix_memalign),
// loaded with LD_PRELOAD; the totals go to stderr at exit. On a machine
// whose speed swings by a quarter within seconds, allocations per
// case are a measure of overhead that does not vary (bench/allocs.sh).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>

namespace {

std::atomic<long long> g_count{0}, g_bytes{0};

void* counted(std::size_t size) {
  g_count.fetch_add(1, std::memory_order_relaxed);
  g_bytes.fetch_add(static_cast<long long>(size), std::memory_order_relaxed);
  // As the standard operator new: call the new-handler until it succeeds or
  // there is none (the campaign's workers install one for out of memory).
  for (;;) {
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}

struct Report {
  ~Report() { std::fprintf(stderr, "alloc_count: %lld allocations, %lld bytes\n", g_count.load(), g_bytes.load()); }
} g_report;

}  // namespace

void* operator new(std::size_t size) { return counted(size); }
void* operator new[](std::size_t size) { return counted(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return counted(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t& t) noexcept { return operator new(size, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
