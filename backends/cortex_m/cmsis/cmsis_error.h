#pragma once
/// How the CMSIS-NN models refuse an input instead of computing something
/// upstream leaves undefined (semantics/cortex-m-and-xnnpack.md §2) or aborts
/// on (the ExecuTorch runtime's ET_CHECK_MSG, §1.7). Every refusal names the
/// upstream function and the operand at fault; limits are checked before any
/// arithmetic is done.
#include <cstdint>
#include <initializer_list>
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

/// An operand's name, held as its parts and written out by str() only when
/// a refusal needs it: the kernels name every element they check, and
/// almost every element passes. str() gives the base ("v"), the base and an
/// element's index ("acc[0,1,2]", or with row_column "input (row 1, column
/// 2)"), then the suffix ("acc[0,1,2]·2^shift").
class OperandName {
 public:
  enum class Style { brackets, row_column };
  OperandName(const char* base) : base_(base) {}  // NOLINT(google-explicit-constructor): a plain name
  /// Up to three indices (brackets) or exactly two (row_column).
  OperandName(const char* base, std::initializer_list<int64_t> index, Style style = Style::brackets)
      : base_(base), style_(style) {
    if (index.size() > 3 || (style == Style::row_column && index.size() != 2)) too_many(index.size());
    for (int64_t i : index) index_[count_++] = i;
  }
  OperandName with_suffix(const char* suffix) const;
  std::string str() const;

 private:
  [[noreturn]] void too_many(size_t indices) const;

  const char* base_;
  int64_t index_[3] = {0, 0, 0};
  int count_ = 0;
  Style style_ = Style::brackets;
  const char* suffix_ = "";
};

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
