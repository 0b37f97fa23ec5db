#pragma once
/// How the CMSIS-NN models refuse an input instead of computing something
/// upstream leaves undefined (semantics/cortex-m-and-xnnpack.md §2) or aborts
/// on (the ExecuTorch runtime's ET_CHECK_MSG, §1.7). Every refusal names the
/// upstream function and the operand at fault; limits are checked before any
/// arithmetic is done.
#include <stdexcept>
#include <string>

namespace sdpa::cortex_m::cmsis {

/// What was refused: `kernel` is the upstream function (`arm_softmax_s8`,
/// `arm_nn_requantize`, ...), `operand` the argument or intermediate at fault
/// (`shift`, `sum (row 2)`, `acc[0,1,3]`, ...), `what` the rule it breaks.
struct CmsisFault {
  std::string kernel;
  std::string operand;
  std::string what;
};

/// "kernel: operand: what".
std::string describe(const CmsisFault& fault);

/// The base of both refusals; `fault()` is the structured form of `what()`.
class CmsisError : public std::runtime_error {
 public:
  explicit CmsisError(CmsisFault fault);
  const CmsisFault& fault() const { return fault_; }

 private:
  CmsisFault fault_;
};

/// The C code would execute undefined behaviour (a shift by 32 or more, a
/// signed int32 overflow, a float-to-int conversion out of range) or run
/// outside its documented parameter range. Upstream has no defined result.
class CmsisUndefined : public CmsisError {
 public:
  using CmsisError::CmsisError;
};

/// A runtime check of the ExecuTorch cortex_m ops fails (ET_CHECK_MSG aborts
/// the program): upstream crashes, deterministically.
class CmsisCheckFailed : public CmsisError {
 public:
  using CmsisError::CmsisError;
};

}  // namespace sdpa::cortex_m::cmsis
