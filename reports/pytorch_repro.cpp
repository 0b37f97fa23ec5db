#include "reports/pytorch_repro.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "harness/case/tensor_data.h"
#include "reports/pytorch_repro_rewrite.h"
#include "reports/python_text.h"

namespace sdpa {
namespace {

// The fixed part of the script: generator, tensors, the call, the comparison.
// The case's constants and RUNS are written in front of it.
constexpr const char* kScriptBody = R"py(
# --- The counter-based generator (sdpacheck README, "Tensor data") ---
import math
M = (1 << 64) - 1
def mix(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return z ^ (z >> 31)
def fnv1a(s):
    h = 0xcbf29ce484222325
    for b in s.encode(): h = ((h ^ b) * 0x100000001b3) & M
    return h
def bits(seed, name, i): return mix((mix(seed ^ fnv1a(name)) + (i + 1) * 0x9e3779b97f4a7c15) & M)
def uniform01(seed, name, i): return (bits(seed, name, i) >> 11) * 2.0**-53
def normal(seed, name, i):
    u1, u2 = uniform01(seed, name, 2 * i), uniform01(seed, name, 2 * i + 1)
    return math.sqrt(-2 * math.log1p(-u1)) * math.cos(2 * math.pi * u2)


# --- Rounding to a dtype, as sdpacheck rounds ---
# (significand bits, exponent of the smallest normal, largest finite value)
FORMATS = {
    torch.float64: (53, -1022, sys.float_info.max),
    torch.float32: (24, -126, 3.4028234663852886e38),
    torch.float16: (11, -14, 65504.0),
    torch.bfloat16: (8, -126, 3.3895313892515355e38),
}


def round_to(dtype, x):
    # Nearest, ties to even, overflow to inf. torch converts float64 to float16 and
    # bfloat16 through float32, rounding twice (a tie can go the wrong way), so the
    # value is rounded here and the tensor conversion in as_tensor is exact.
    if dtype == torch.float64 or x == 0 or not math.isfinite(x):
        return x
    precision, emin, max_finite = FORMATS[dtype]
    quantum = 2.0 ** (max(math.frexp(x)[1] - 1, emin) - precision + 1)
    r = round(x / quantum) * quantum
    return math.copysign(math.inf, x) if abs(r) > max_finite else r


def as_tensor(values, shape, dtype):
    return torch.tensor([round_to(dtype, x) for x in values], dtype=torch.float64).reshape(shape).to(dtype)


# --- The case's tensors (sdpacheck harness/case/tensor_data.cpp) ---
def llround(x):  # C's llround: halfway cases away from zero
    a = abs(x)
    n = math.floor(a)
    if a - n >= 0.5:
        n += 1
    return int(math.copysign(n, x))


def draw(name, i):
    if DISTRIBUTION == "normal":
        return MAGNITUDE * normal(SEED, name, i)
    if DISTRIBUTION == "uniform":
        return MAGNITUDE * (2.0 * uniform01(SEED, name, i) - 1.0)
    if DISTRIBUTION == "integers":  # integers in [-r, r]: q.k^T stays exact in float32
        r = max(1, min(16, llround(MAGNITUDE)))
        return float(math.floor(uniform01(SEED, name, i) * float(2 * r + 1)) - r)
    return 16.0 * MAGNITUDE * normal(SEED, name, i)  # "large"


def special_value(dtype):
    # "overflow" is one ulp past the dtype's largest finite value: it rounds to inf.
    value = SPECIAL["value"]
    if value == "nan":
        return math.nan
    if value in ("+inf", "overflow"):
        return math.inf
    if value == "-inf":
        return -math.inf
    return round_to(dtype, 65504.0)  # "huge"


def apply_special(name, values, shape, dtype):
    # The case's special values, written over the drawn ones: which elements or
    # rows (of the last dim) comes from the stream "special_<tensor>".
    if SPECIAL is None or SPECIAL["tensor"] != name or not values:
        return values
    value = special_value(dtype)
    width = max(1, shape[-1]) if shape else 1
    rows = len(values) // width
    for n in range(SPECIAL["count"]):
        b = bits(SEED, "special_" + name, n)
        if SPECIAL["place"] == "elements":
            values[b % len(values)] = value
        else:
            row = b % rows
            values[row * width:(row + 1) * width] = [value] * width
    return values


def make_input(name, batch, heads, length, dim):
    # Element i counts over [batch..., H, L, D] whatever the layout; returned in the case layout.
    shape = batch + [heads, length, dim]
    values = [round_to(DTYPE, draw(name, i)) for i in range(math.prod(shape))]
    t = as_tensor(apply_special(name, values, shape, DTYPE), shape, DTYPE)
    return t.transpose(-3, -2).contiguous() if LAYOUT == "bshd" else t


def mask_keeps(flat, shape):
    # Element flat of the mask: row i, key j, its slice over the dims before the last two,
    # its batch element over the dims before the last three.
    cols, rows = shape[-1], (shape[-2] if len(shape) >= 2 else 1)
    heads = shape[-3] if len(shape) >= 3 else 1
    j, i, slice_ = flat % cols, (flat // cols) % rows, flat // (rows * cols)
    if MASK_PATTERN in ("random", "full-row"):
        return uniform01(SEED, "mask", flat) < MASK_PARAM
    if MASK_PATTERN == "causal":
        return j <= i
    if MASK_PATTERN == "window":
        return i - int(MASK_PARAM) < j <= i
    if MASK_PATTERN == "padding":
        return j < int(MASK_PARAM)
    if MASK_PATTERN == "left-padding":
        return j >= int(MASK_PARAM)
    if MASK_PATTERN == "per-batch-padding":  # batch element b pads bits % (param + 1) trailing keys
        pad = bits(SEED, "mask_lengths", slice_ // heads) % (int(MASK_PARAM) + 1)
        return j < max(0, cols - pad)
    if MASK_PATTERN == "block-sparse":  # whole blocks of MASK_BLOCK = (rows, keys)
        block_rows, block_keys = MASK_BLOCK
        row_blocks, key_blocks = -(-rows // block_rows), -(-cols // block_keys)
        block = (slice_ * row_blocks + i // block_rows) * key_blocks + j // block_keys
        return uniform01(SEED, "mask_blocks", block) < MASK_PARAM
    return True  # "keep-all"


def mask_dropped_value():
    if MASK_FILL == "-inf":
        return -math.inf
    if MASK_FILL == "min":  # the mask dtype's lowest finite value
        return -FORMATS[MASK_DTYPE][2]
    return round_to(MASK_DTYPE, -1e4)


def make_mask(shape):
    # In the mask's own shape and dtype; row i and key j are the last two dims.
    rows, cols = (shape[-2] if len(shape) >= 2 else 1), shape[-1]
    # full-row: one row, the same in every leading slice, drops every key.
    empty_row = bits(SEED, "mask_row", 0) % rows if MASK_PATTERN == "full-row" else -1
    kept = [(flat // cols) % rows != empty_row and mask_keeps(flat, shape) for flat in range(math.prod(shape))]
    if MASK_DTYPE == torch.bool:
        return torch.tensor(kept, dtype=torch.bool).reshape(shape)
    dropped = mask_dropped_value()
    values = [round_to(MASK_DTYPE, 0.0 if k else dropped) for k in kept]
    return as_tensor(apply_special("mask", values, shape, MASK_DTYPE), shape, MASK_DTYPE)


def dropout_keep(shape):
    # Weight `index` of [batch..., Hq, Lq, Lkv] is kept iff uniform01(seed, "dropout", index) >= p.
    keep = [uniform01(SEED, "dropout", i) >= DROPOUT_P for i in range(math.prod(shape))]
    return torch.tensor(keep, dtype=torch.bool).reshape(shape)


# --- The original call ---
def math_composition(q, k, v, mask, keep, is_causal):
    # What the call means, in float64: scores times the scale, causal top-left, a bool
    # mask as -inf, an additive mask added, softmax with every row of all -inf set to 0
    # (PyTorch >= 2.5's _safe_softmax), then the dropout keep mask scaled by 1 / (1 - p).
    q, k, v = q.double(), k.double(), v.double()
    if Q_HEADS != KV_HEADS and KV_HEADS != 1:  # GQA: query head h reads kv head h // (Hq / Hkv)
        k = k.repeat_interleave(Q_HEADS // KV_HEADS, -3)
        v = v.repeat_interleave(Q_HEADS // KV_HEADS, -3)
    scale = SCALE if SCALE is not None else 1 / math.sqrt(HEAD_DIM)
    s = (q @ k.transpose(-2, -1)) * scale
    if is_causal:
        s = s.masked_fill(torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).tril().logical_not(), -math.inf)
    if mask is not None:
        s = s.masked_fill(mask.logical_not(), -math.inf) if mask.dtype == torch.bool else s + mask.double()
    fully_masked = (s == -math.inf).all(-1, keepdim=True)
    w = torch.softmax(s, -1).masked_fill(fully_masked, 0.0)
    if keep is not None:
        w = w * keep.double() / (1 - DROPOUT_P)
    return w @ v


def call_original(q, k, v, mask, start_pos):
    # Returns (what ran, output [batch..., Hq, Lq, Ev]).
    if LAYOUT == "bshd":  # the entry form transposes q, k, v to [batch..., H, L, D] first
        q, k, v = (t.transpose(-3, -2) for t in (q, k, v))
    is_causal = IS_CAUSAL
    if IS_CAUSAL and CAUSAL_ALIGNMENT != "top-left":
        # PyTorch's is_causal is top-left: the call's rule goes in as a bool mask (a causal
        # call has none of its own), query i keeping key j iff j <= i + Lkv - Lq
        # (bottom-right) or j <= i + start_pos (start-pos: rows start_pos.. of a KV cache's mask).
        lq, lkv = q.shape[-2], k.shape[-2]
        diagonal = lkv - lq if CAUSAL_ALIGNMENT == "bottom-right" else start_pos
        mask, is_causal = torch.ones(lq, lkv, dtype=torch.bool).tril(diagonal), False
    if DROPOUT_P > 0:
        keep = dropout_keep(list(q.shape[:-1]) + [k.shape[-2]])
        return ("explicit math composition in float64 with sdpacheck's dropout keep mask "
                "(PyTorch's RNG cannot replay sdpacheck's dropout stream)",
                math_composition(q, k, v, mask, keep, is_causal))
    if hasattr(F, "scaled_dot_product_attention"):
        extra = {}
        if SCALE is not None:
            extra["scale"] = SCALE
        if ENABLE_GQA:
            extra["enable_gqa"] = True
        return (f"torch.nn.functional.scaled_dot_product_attention (PyTorch {torch.__version__})",
                F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0, is_causal=is_causal, **extra))
    old = f"PyTorch {torch.__version__}'s F._scaled_dot_product_attention"
    if not hasattr(F, "_scaled_dot_product_attention"):
        why = f"PyTorch {torch.__version__} has no SDPA op"
    elif SCALE is not None and SCALE != 1 / math.sqrt(HEAD_DIM):
        why = f"{old} takes no scale"
    elif Q_HEADS != KV_HEADS and KV_HEADS != 1:
        why = f"{old} takes no enable_gqa"
    else:
        try:
            return old, F._scaled_dot_product_attention(q, k, v, mask, 0.0, False, is_causal)[0]
        except RuntimeError as e:  # 1.13 on CPU has no float16 bmm
            why = f"{old} raised: {str(e).splitlines()[0]}"
    return f"explicit math composition in float64 ({why})", math_composition(q, k, v, mask, None, is_causal)


# --- The comparison ---
def row_index(row, dims):  # flat query row -> (batch..., h, i)
    index = []
    for d in reversed(dims):
        row, r = divmod(row, d)
        index.append(r)
    return tuple(reversed(index))


def tolerance(dtype):
    # 1e-6 of max(|golden|, |v|); a result in float16 or bfloat16 cannot come that
    # close, so there 8 units of its roundoff.
    return max(1e-6, 8 * 2.0 ** -FORMATS[dtype][0])


def compare(n, run, out, v):
    # Prints the largest difference and every query row finite in one and not in the
    # other; returns what differs, for the last line.
    dims = run["batch"] + [Q_HEADS, run["q_len"]]
    if list(out.shape) != dims + [VALUE_DIM]:
        print(f"  PyTorch's output has shape {list(out.shape)}, sdpacheck's golden {dims + [VALUE_DIM]}")
        return [f"run {n}: output shape {list(out.shape)} instead of {dims + [VALUE_DIM]}"]
    got, want = out.double().flatten().tolist(), run["golden"]
    scale = max([abs(x) for x in want + v.double().flatten().tolist() if math.isfinite(x)] + [1e-300])
    largest, rows = 0.0, []
    for row in range(len(want) // VALUE_DIM):
        for e in range(row * VALUE_DIM, (row + 1) * VALUE_DIM):
            g, w = got[e], want[e]
            if math.isfinite(g) and math.isfinite(w):
                largest = max(largest, abs(g - w))
            elif not (g == w or (math.isnan(g) and math.isnan(w))):
                index = row_index(row, dims)
                why = " (fully masked row)" if index in run["fully_masked_rows"] else ""
                print(f"  row {index}: PyTorch {g}, sdpacheck golden {w}{why}")
                rows.append(index)
                break
    tol = tolerance(out.dtype)
    print(f"  largest difference where both are finite: {largest:.3g} "
          f"({largest / scale:.3g} of max(|golden|, |v|) = {scale:.6g}; tolerance {tol:.3g})")
    found = []
    if rows:
        found.append(f"run {n}: {len(rows)} query row(s) non-finite in one and finite in the other, first {rows[0]}")
    if largest > tol * scale:
        found.append(f"run {n}: difference {largest / scale:.3g} of max(|golden|, |v|), above {tol:.3g}")
    return found


def main():
    dump = "--dump" in sys.argv[1:]
    found, ran = [], []
    for n, run in enumerate(RUNS):
        q = make_input("q", run["batch"], Q_HEADS, run["q_len"], HEAD_DIM)
        k = make_input("k", run["batch"], KV_HEADS, run["kv_len"], HEAD_DIM)
        v = make_input("v", run["batch"], KV_HEADS, run["kv_len"], VALUE_DIM)
        mask = make_mask(run["mask_shape"]) if run["mask_shape"] is not None else None
        if dump:
            for name, t in (("q", q), ("k", k), ("v", v), ("mask", mask)):
                if t is not None:
                    values = " ".join(float(x).hex() for x in t.double().flatten().tolist())
                    print(f"dump {n} {name} {t.dtype} {'x'.join(map(str, t.shape))} {values}")
            continue
        how, out = call_original(q, k, v, mask, run["start_pos"])
        print(f"run {n} at sizes {run['sizes']}: {how}")
        found += compare(n, run, out, v)
        ran.append({"inputs": (q, k, v) if mask is None else (q, k, v, mask), "how": how, "out": out, "v": v})
    if dump:
        return
    if REWRITE is not None:  # a finding in the rewrite: its own part of the script says what ran
        print(rewrite_verdict(found, ran))
    else:
        print("REPRODUCED: PyTorch differs from sdpacheck's golden: " + "; ".join(found) if found
              else "NOT REPRODUCED: PyTorch agrees with sdpacheck's golden")
)py";

std::string py_dtype(DType t) {
  switch (t) {
    case DType::f64: return "torch.float64";
    case DType::f16: return "torch.float16";
    case DType::bf16: return "torch.bfloat16";
    case DType::b8: return "torch.bool";
    default: return "torch.float32";  // f32, and int8 cases, whose q, k, v are f32 (make_input)
  }
}

// A bottom-right or start-pos causal call is not what
// F.scaled_dot_product_attention's is_causal means: the script says so and
// passes the rule as a mask.
std::string bottom_right_note(const Case& c) {
  if (!c.is_causal || c.causal_alignment == CausalAlignment::top_left) return "";
  if (c.causal_alignment == CausalAlignment::start_pos)
    return "# Causal alignment: start-pos, a KV-cache step at position start_pos (query i keeps\n"
           "# key j iff j <= i + start_pos: rows start_pos.. of the model's causal mask, as\n"
           "# llama.custom_sdpa's offset). F.scaled_dot_product_attention's is_causal is\n"
           "# top-left, so the script passes that rule as a bool mask instead.\n";
  return "# Causal alignment: bottom-right, as FlashAttention-2 and a direct call of\n"
         "# aten._scaled_dot_product_flash_attention align it (query i keeps key j iff\n"
         "# j <= i + Lkv - Lq; with Lq == 1 every key). F.scaled_dot_product_attention's is_causal\n"
         "# is top-left, so the script passes that rule as a bool mask instead.\n";
}

void write_header(std::ostream& o, const CorpusEntry& e, const std::string& source,
                  const std::string& reference_name) {
  o << "#!/usr/bin/env python3\n"
    << "# Reproduces an sdpacheck corpus entry against PyTorch's scaled_dot_product_attention.\n#\n"
    << "# Case: " << case_summary(e.c) << "\n"
    << "#   target " << e.target << ", options " << nlohmann::json(e.options).dump()
    << ", expected verdict " << e.expect << "\n"
    << "# Recorded finding: " << one_line(e.finding.dump()) << "\n"
    << bottom_right_note(e.c)
    << "# Provenance: " << one_line(e.provenance.dump()) << "\n"
    << "# Produced by `sdpacheck repro " << one_line(source) << " --pytorch` (sdpacheck " << kVersion
    << ").\n"
    << "# The golden outputs below are sdpacheck's reference model (" << reference_name
    << ", float64) at each\n"
    << "# runtime size: what the original call means, a fully masked row giving 0 as in PyTorch >= 2.5.\n"
    << "# The script rebuilds q, k, v and the mask with sdpacheck's counter-based generator, makes\n"
    << "# the original call in the installed PyTorch and prints where the two differ.\n#\n"
    << "# Usage: python3 SCRIPT [--dump]   (--dump prints the rebuilt tensors and stops)\n"
    << "import sys\n\nimport torch\nimport torch.nn.functional as F\n\n";
}

void write_case_constants(std::ostream& o, const Case& c) {
  o << "# --- The case ---\n"
    << "DTYPE = " << py_dtype(c.dtype) << "\n"
    << "LAYOUT = " << py_str(layout_name(c.layout)) << "  # of q, k and v in the call's entry form\n"
    << "Q_HEADS, KV_HEADS, HEAD_DIM, VALUE_DIM = " << c.q_heads << ", " << c.kv_heads << ", "
    << c.head_dim << ", " << c.value_dim << "\n"
    << "ENABLE_GQA = " << (c.enable_gqa ? "True" : "False") << "\n"
    << "IS_CAUSAL = " << (c.is_causal ? "True" : "False") << "\n"
    << "CAUSAL_ALIGNMENT = " << py_str(alignment_name(c.causal_alignment)) << "\n"
    << "DROPOUT_P = " << py_float(c.dropout_p) << "\n"
    << "SCALE = " << (c.scale ? py_float(*c.scale) : "None") << "  # None: 1 / sqrt(HEAD_DIM)\n"
    << "SEED = " << c.data.seed << "\n"
    << "DISTRIBUTION = " << py_str(distribution_name(c.data.distribution)) << "\n"
    << "MAGNITUDE = " << py_float(c.data.magnitude) << "\n";
  if (const auto& sp = c.data.special)
    o << "SPECIAL = {\"value\": " << py_str(special_value_name(sp->value)) << ", \"tensor\": " << py_str(sp->tensor)
      << ", \"place\": " << py_str(special_place_name(sp->place)) << ", \"count\": " << sp->count
      << "}  # special values written over the drawn data\n";
  else
    o << "SPECIAL = None  # finite data only\n";
  if (c.mask) {
    o << "MASK_DTYPE = " << py_dtype(c.mask->dtype) << "\n"
      << "MASK_PATTERN = " << py_str(pattern_name(c.mask->pattern)) << "\n"
      << "MASK_PARAM = " << py_float(c.mask->param) << "\n"
      << "MASK_FILL = " << py_str(fill_name(c.mask->fill)) << "  # of a dropped position, additive masks\n"
      << "MASK_BLOCK = ";
    if (c.mask->pattern == MaskPattern::block_sparse)
      o << "(" << c.mask->block_rows << ", " << c.mask->block_keys << ")  # block-sparse: query rows, keys\n";
    else
      o << "None  # block-sparse only\n";
  } else {
    o << "MASK_DTYPE = MASK_PATTERN = MASK_PARAM = MASK_FILL = MASK_BLOCK = None  # no mask\n";
  }
}

// The rows of [batch..., Hq, Lq] whose every key is dropped, as Python tuples.
std::string fully_masked_rows(const Golden& g, const ConcreteSizes& s) {
  Shape dims = s.batch;
  dims.insert(dims.end(), {s.Hq, s.Lq});
  std::string out = "[";
  for (size_t row = 0; row < g.fully_masked.size(); ++row) {
    if (!g.fully_masked[row]) continue;
    std::vector<int64_t> index(dims.size());
    int64_t rest = static_cast<int64_t>(row);
    for (size_t d = dims.size(); d-- > 0;) {
      index[d] = rest % dims[d];
      rest /= dims[d];
    }
    std::string t = py_ints(index);
    out += (out.size() > 1 ? ", (" : "(") + t.substr(1, t.size() - 2) + ")";
  }
  return out + "]";
}

void write_runs(std::ostream& o, const Case& c, const std::vector<Golden>& goldens) {
  const std::vector<Assignment> runs = c.runs();
  if (runs.size() != goldens.size())
    throw std::invalid_argument("pytorch_repro_script: one golden per runtime size is needed");
  o << "\n# --- Each runtime size, with sdpacheck's golden output ([batch..., Hq, Lq, Ev], flat) ---\n"
    << "RUNS = [\n";
  for (size_t n = 0; n < runs.size(); ++n) {
    const ConcreteSizes s = concrete_sizes(c, runs[n]);
    const Golden& g = goldens[n];
    if (!g.disagreement.empty())
      o << "    # sdpacheck's two oracles disagree here: " << one_line(g.disagreement) << "\n";
    o << "    {\n        \"sizes\": " << nlohmann::json(runs[n]).dump() << ",\n"
      << "        \"batch\": " << py_ints(s.batch) << ", \"q_len\": " << s.Lq
      << ", \"kv_len\": " << s.Lkv << ", \"start_pos\": " << s.start_pos << ",\n"
      << "        \"mask_shape\": " << (c.mask ? py_ints(s.mask_shape) : "None") << ",\n"
      << "        \"fully_masked_rows\": " << fully_masked_rows(g, s) << ",\n"
      << "        \"golden\": [";
    // A query row a line (4 values a line within a row).
    const size_t ev = static_cast<size_t>(s.Ev);
    for (size_t i = 0; i < g.out.data.size(); ++i)
      o << (i % ev % 4 == 0 ? "\n            " : " ") << py_float(g.out.data[i]) << ",";
    o << "\n        ],\n    },\n";
  }
  o << "]\n\n";
}

}  // namespace

std::vector<Golden> run_goldens(const Case& c, const ReferenceModel& reference) {
  std::vector<Golden> out;
  for (const Assignment& at : c.runs()) out.push_back(reference.golden(c, make_case_tensors(c, at), at));
  return out;
}

std::string pytorch_repro_script(const CorpusEntry& e, const std::string& source,
                                 const std::string& reference_name, const std::vector<Golden>& goldens,
                                 const RewriteRun* rewrite) {
  std::ostringstream o;
  write_header(o, e, source, reference_name);
  write_case_constants(o, e.c);
  write_runs(o, e.c, goldens);
  write_rewrite_constants(o, e, rewrite);
  o << kScriptBody;
  write_rewrite_body(o, rewrite);
  o << "\n\nif __name__ == \"__main__\":\n    main()\n";
  return o.str();
}

}  // namespace sdpa
