#!/usr/bin/python3
"""The loop sdpacheck's throughput is compared with: Hypothesis draws an
SDPA call (batch, Hq, Hkv, Lq, Lkv, E, Ev, a bool or additive mask or
is_causal, a scale, f32 or bf16 inputs), PyTorch's SDPA runs it, and a
float64 reference computed from the same inputs is compared within a bound.

Usage: python_loop.py CASES [SEED]. Prints one line: cases, seconds, cases/s.
The sizes follow sdpacheck's default policy at the same scale: lengths up
to 128, log-uniform; heads up to 8; head dims up to 16; batch up to 3.
"""
import math
import sys
import time

import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings, strategies as st

torch.set_num_threads(1)
sdpa = getattr(F, "scaled_dot_product_attention", None)


def run_sdpa(q, k, v, mask, causal, scale):
    if sdpa is not None:  # PyTorch 2
        return sdpa(q, k, v, attn_mask=mask, is_causal=causal, scale=scale)
    # PyTorch 1.13: the private op takes no scale; fold it into q.
    q = q * (scale * math.sqrt(q.shape[-1]))
    return F._scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)[0]


def reference(q, k, v, mask, causal, scale):
    q, k, v = q.double(), k.double(), v.double()
    s = q @ k.transpose(-2, -1) * scale
    Lq, Lkv = s.shape[-2], s.shape[-1]
    if causal:
        s = s.masked_fill(~torch.ones(Lq, Lkv, dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.double()
    p = torch.softmax(s, dim=-1)
    return torch.nan_to_num(p, nan=0.0) @ v


lengths = st.integers(0, 7).map(lambda b: min(128, max(1, int(2 ** b + (b * 37) % (2 ** b or 1)))))
call = st.fixed_dictionaries({
    "batch": st.integers(1, 3),
    "kv_heads": st.integers(1, 4),
    "group": st.integers(1, 2),
    "Lq": lengths, "Lkv": lengths,
    "E": st.integers(1, 16), "Ev": st.integers(1, 16),
    "dtype": st.sampled_from([torch.float32, torch.bfloat16]),
    "mask": st.sampled_from(["none", "causal", "bool", "additive"]),
    "scale": st.one_of(st.none(), st.floats(0.05, 2.0)),
    "seed": st.integers(0, 2 ** 31 - 1),
})

failures = 0


def check(c):
    global failures
    g = torch.Generator().manual_seed(c["seed"])
    Hkv, Hq = c["kv_heads"], c["kv_heads"] * c["group"]
    q = torch.randn(c["batch"], Hq, c["Lq"], c["E"], generator=g).to(c["dtype"])
    k = torch.randn(c["batch"], Hkv, c["Lkv"], c["E"], generator=g).to(c["dtype"])
    v = torch.randn(c["batch"], Hkv, c["Lkv"], c["Ev"], generator=g).to(c["dtype"])
    # Grouped heads as PyTorch 1.13 takes them: K and V repeated per group.
    k, v = k.repeat_interleave(c["group"], dim=1), v.repeat_interleave(c["group"], dim=1)
    mask, causal = None, c["mask"] == "causal"
    if c["mask"] == "bool":
        mask = torch.rand(c["Lq"], c["Lkv"], generator=g) < 0.7
        mask[:, 0] = True  # no fully masked row: 1.13's math path gives NaN there
    elif c["mask"] == "additive":
        mask = torch.randn(c["Lq"], c["Lkv"], generator=g).to(c["dtype"])
    scale = c["scale"] if c["scale"] is not None else 1.0 / math.sqrt(c["E"])
    out = run_sdpa(q, k, v, mask, causal, scale).double()
    gold = reference(q, k, v, mask, causal, scale)
    eps = 2.0 ** -7 if c["dtype"] == torch.bfloat16 else 2.0 ** -23
    bound = 8 * eps * (c["Lkv"] + c["E"]) * (gold.abs().max().item() + 1.0)
    if not (out - gold).abs().max().item() <= bound:
        failures += 1


def main():
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    run = settings(max_examples=cases, deadline=None, database=None, derandomize=False,
                   suppress_health_check=list(HealthCheck))(given(call)(check))
    import random
    random.seed(seed)
    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    print(f"python-hypothesis-torch {cases} cases {seconds:.2f} s {cases / seconds:.0f} cases/s "
          f"(torch {torch.__version__}, {failures} over the bound)")


if __name__ == "__main__":
    main()
