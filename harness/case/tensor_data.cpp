#include "harness/case/tensor_data.h"

#include <algorithm>
#include <cmath>

namespace sdpa {

uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ULL;
  return h;
}

CounterStream::CounterStream(uint64_t seed, const std::string& name)
    : key_(splitmix64_mix(seed ^ fnv1a64(name))) {}

uint64_t CounterStream::bits(uint64_t index) const {
  return splitmix64_mix(key_ + (index + 1) * 0x9e3779b97f4a7c15ULL);
}

double CounterStream::uniform01(uint64_t index) const {
  return static_cast<double>(bits(index) >> 11) * 0x1p-53;
}

double CounterStream::normal(uint64_t index) const {
  double u1 = uniform01(2 * index), u2 = uniform01(2 * index + 1);
  return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * M_PI * u2);
}

namespace {

double draw(const CounterStream& s, Distribution d, double magnitude, uint64_t i) {
  switch (d) {
    case Distribution::normal: return magnitude * s.normal(i);
    case Distribution::uniform: return magnitude * (2.0 * s.uniform01(i) - 1.0);
    case Distribution::integers: {
      // Integers in [-r, r]: q.k^T stays exact in f32 for every head dim allowed.
      int64_t r = std::max<int64_t>(1, std::min<int64_t>(16, std::llround(magnitude)));
      return std::floor(s.uniform01(i) * static_cast<double>(2 * r + 1)) - static_cast<double>(r);
    }
    case Distribution::large: return 16.0 * magnitude * s.normal(i);
  }
  return 0.0;
}

}  // namespace

double special_value(SpecialValue v, DType dtype) {
  switch (v) {
    case SpecialValue::nan: return std::nan("");
    case SpecialValue::pos_inf: return INFINITY;
    case SpecialValue::neg_inf: return -INFINITY;
    // Past the largest finite value by an ulp, so rounding gives inf; f64
    // has nothing past it but inf.
    case SpecialValue::overflow: return dtype == DType::f64 ? INFINITY : lowest(dtype) * -1.0 + ulp(dtype, -lowest(dtype));
    case SpecialValue::huge: return 65504.0;
  }
  return 0.0;
}

void apply_special(const Case& c, const std::string& name, Tensor& t) {
  const auto& sp = c.data.special;
  if (!sp || sp->tensor != name || t.numel() == 0) return;
  const CounterStream s(c.data.seed, "special_" + name);
  const double value = round_to(t.dtype, special_value(sp->value, t.dtype));
  const int64_t width = t.shape.empty() ? 1 : std::max<int64_t>(1, t.shape.back());
  const int64_t rows = t.numel() / width;
  for (int64_t n = 0; n < sp->count; ++n) {
    const uint64_t b = s.bits(static_cast<uint64_t>(n));
    if (sp->place == SpecialPlace::elements) {
      t.data[b % static_cast<uint64_t>(t.numel())] = value;
    } else {
      const int64_t row = static_cast<int64_t>(b % static_cast<uint64_t>(rows));
      std::fill(t.data.begin() + row * width, t.data.begin() + (row + 1) * width, value);
    }
  }
}

Tensor make_input(const Case& c, const std::string& name, const Shape& bhsd_shape) {
  Tensor t(c.dtype == DType::i8 ? DType::f32 : c.dtype, bhsd_shape);
  CounterStream s(c.data.seed, name);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data[i] = round_to(t.dtype, draw(s, c.data.distribution, c.data.magnitude, i));
  apply_special(c, name, t);
  return t;
}

Tensor swap_heads_and_seq(const Tensor& t) {
  Tensor out = t;
  int64_t r = t.dim();
  std::swap(out.shape[r - 3], out.shape[r - 2]);
  int64_t A = t.shape[r - 3], B = t.shape[r - 2], D = t.shape[r - 1];
  if (t.numel() == 0) return out;  // a zero-size dim: nothing to move
  int64_t outer = t.numel() / (A * B * D);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = 0; a < A; ++a)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t d = 0; d < D; ++d)
          out.data[((o * B + b) * A + a) * D + d] = t.data[((o * A + a) * B + b) * D + d];
  return out;
}

namespace {

// Where element `flat` of a mask of `shape` sits: query row i, key j, the
// slice over every dim before the last two, and the batch element over
// every dim before the last three (the dims a mask shares with the batch).
struct MaskIndex {
  int64_t cols, rows, slice_size, batch_size;
  explicit MaskIndex(const Shape& shape)
      : cols(shape.back()),
        rows(shape.size() >= 2 ? shape[shape.size() - 2] : 1),
        slice_size(cols * rows),
        batch_size(slice_size * (shape.size() >= 3 ? shape[shape.size() - 3] : 1)) {}
};

// The rule of one pattern, for the whole mask at once: each needs its own
// few streams, drawn once per row, block or batch element.
class PatternRule {
 public:
  PatternRule(const Case& c, const Shape& shape)
      : m_(*c.mask), at_(shape), elements_(c.data.seed, "mask"), blocks_(c.data.seed, "mask_blocks"),
        lengths_(c.data.seed, "mask_lengths") {
    if (m_.pattern == MaskPattern::block_sparse) {
      row_blocks_ = (at_.rows + m_.block_rows - 1) / m_.block_rows;
      key_blocks_ = (at_.cols + m_.block_keys - 1) / m_.block_keys;
    }
  }

  /// Where one row of the mask lies: its first element's flat index, its
  /// row i within a [rows, cols] slice, the slice and the batch element.
  struct Row {
    int64_t base, i, slice, batch;
  };
  Row row_at(int64_t base) const {
    return {base, (base / at_.cols) % at_.rows, base / at_.slice_size, base / at_.batch_size};
  }

  /// Whether column j of row r is kept.
  bool keeps(const Row& r, int64_t j) const {
    const int64_t i = r.i;
    const auto p = static_cast<int64_t>(m_.param);
    switch (m_.pattern) {
      case MaskPattern::random:
      case MaskPattern::full_row: return elements_.uniform01(static_cast<uint64_t>(r.base + j)) < m_.param;
      case MaskPattern::causal: return j <= i;
      case MaskPattern::window: return j <= i && j > i - p;
      case MaskPattern::padding: return j < p;
      case MaskPattern::keep_all: return true;
      case MaskPattern::left_padding: return j >= p;
      case MaskPattern::per_batch_padding: return j < valid_length(r.batch);
      case MaskPattern::block_sparse: {
        const int64_t block = (r.slice * row_blocks_ + i / m_.block_rows) * key_blocks_ + j / m_.block_keys;
        return blocks_.uniform01(static_cast<uint64_t>(block)) < m_.param;
      }
    }
    return true;
  }

 private:
  // Batch element b pads bits(seed, "mask_lengths", b) % (param + 1)
  // trailing keys: its valid length is what is left of the mask's keys.
  int64_t valid_length(int64_t b) const {
    const auto pad = static_cast<int64_t>(lengths_.bits(static_cast<uint64_t>(b)) %
                                          (static_cast<uint64_t>(m_.param) + 1));
    return std::max<int64_t>(0, at_.cols - pad);
  }

  const MaskSpec& m_;
  MaskIndex at_;
  CounterStream elements_, blocks_, lengths_;
  int64_t row_blocks_ = 1, key_blocks_ = 1;
};

double dropped_value(const MaskSpec& m) {
  switch (m.fill) {
    case MaskFill::neg_inf: return -INFINITY;
    case MaskFill::min: return lowest(m.dtype);
    case MaskFill::neg_1e4: return round_to(m.dtype, -1e4);
  }
  return -INFINITY;
}

}  // namespace

std::vector<bool> mask_keeps(const Case& c, const Shape& shape) {
  const MaskSpec& m = *c.mask;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<bool> keep(static_cast<size_t>(n), false);
  if (n == 0) return keep;
  const MaskIndex at(shape);
  const PatternRule rule(c, shape);
  // full-row: one row (the same in every leading slice) drops every key.
  const int64_t empty_row = m.pattern == MaskPattern::full_row
                                ? static_cast<int64_t>(CounterStream(c.data.seed, "mask_row").bits(0) %
                                                       static_cast<uint64_t>(at.rows))
                                : -1;
  // Row by row: the divisions that place an element are made once a row.
  for (int64_t base = 0; base < n; base += at.cols) {
    const PatternRule::Row row = rule.row_at(base);
    if (row.i == empty_row) continue;
    for (int64_t j = 0; j < at.cols; ++j) keep[static_cast<size_t>(base + j)] = rule.keeps(row, j);
  }
  return keep;
}

Tensor make_mask(const Case& c, const Shape& shape) {
  const MaskSpec& m = *c.mask;
  Tensor t(m.dtype, shape);
  if (t.numel() == 0) return t;
  const std::vector<bool> keep = mask_keeps(c, shape);
  const bool is_bool = m.dtype == DType::b8;
  const double drop = is_bool ? 0.0 : dropped_value(m);
  const double kept = is_bool ? 1.0 : 0.0;
  for (int64_t flat = 0; flat < t.numel(); ++flat) t.data[flat] = keep[static_cast<size_t>(flat)] ? kept : drop;
  if (!is_bool) apply_special(c, "mask", t);
  return t;
}

bool dropout_keep(const CounterStream& stream, uint64_t index, double p) {
  return stream.uniform01(index) >= p;
}

CaseTensors make_case_tensors(const Case& c, const Assignment& at) {
  ConcreteSizes s = concrete_sizes(c, at);
  auto bhsd = [&](int64_t h, int64_t l, int64_t d) {
    Shape sh = s.batch;
    sh.insert(sh.end(), {h, l, d});
    return sh;
  };
  CaseTensors t;
  t.q = make_input(c, "q", bhsd(s.Hq, s.Lq, s.E));
  t.k = make_input(c, "k", bhsd(s.Hkv, s.Lkv, s.E));
  t.v = make_input(c, "v", bhsd(s.Hkv, s.Lkv, s.Ev));
  if (c.layout == Layout::bshd) {
    t.q = swap_heads_and_seq(t.q);
    t.k = swap_heads_and_seq(t.k);
    t.v = swap_heads_and_seq(t.v);
  }
  if (c.mask) t.mask = make_mask(c, s.mask_shape);
  t.start_pos = s.start_pos;
  return t;
}

}  // namespace sdpa
