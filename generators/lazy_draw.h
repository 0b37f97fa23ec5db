#pragma once
/// A draw made only when read. gen_lazy(g) consumes the same Random that g
/// would and shrinks exactly as g does, but runs g only when the value or
/// its shrinks are asked for: a case reads only some of the runtime sizes
/// and symbols it draws (RapidCheck's Random costs a Threefish block per
/// draw), and the draws it does not read cost almost nothing.
#include <rapidcheck.h>

#include <memory>
#include <optional>
#include <utility>

namespace sdpa {

template <typename T>
class Lazy {
 public:
  struct Cell {
    Cell(rc::Random r, int s, rc::Gen<T> g) : random(std::move(r)), size(s), gen(std::move(g)) {}
    explicit Cell(rc::Shrinkable<T> s) : drawn(std::move(s)) {}
    const rc::Shrinkable<T>& shrinkable() {
      if (!drawn) drawn = gen(random, size);
      return *drawn;
    }
    const T& value() {
      if (!value_) value_ = shrinkable().value();
      return *value_;
    }
    rc::Random random;
    int size = 0;
    rc::Gen<T> gen = rc::gen::just(T{});
    std::optional<rc::Shrinkable<T>> drawn;
    std::optional<T> value_;
  };

  Lazy() = default;  // reads T{}: what a drawn struct holds before the draw sets the field
  explicit Lazy(std::shared_ptr<Cell> cell) : cell_(std::move(cell)) {}
  /// The drawn value (drawn on the first read).
  const T& get() const {
    static const T kDefault{};
    return cell_ ? cell_->value() : kDefault;
  }

 private:
  std::shared_ptr<Cell> cell_;
};

namespace lazy_internal {

template <typename T>
rc::Shrinkable<Lazy<T>> lazy_shrinkable(std::shared_ptr<typename Lazy<T>::Cell> cell) {
  return rc::shrinkable::lambda([cell] { return Lazy<T>(cell); },
                                [cell] {
                                  return rc::seq::map(cell->shrinkable().shrinks(), [](rc::Shrinkable<T> s) {
                                    return lazy_shrinkable<T>(
                                        std::make_shared<typename Lazy<T>::Cell>(std::move(s)));
                                  });
                                });
}

}  // namespace lazy_internal

template <typename T>
rc::Gen<Lazy<T>> gen_lazy(rc::Gen<T> g) {
  return [g](const rc::Random& random, int size) {
    return lazy_internal::lazy_shrinkable<T>(std::make_shared<typename Lazy<T>::Cell>(random, size, g));
  };
}

}  // namespace sdpa
