#!/usr/bin/python3
"""ATen ops on the installed PyTorch as an sdpacheck kernel set: every op the
aten target's graphs hold (the math decomposition's, and the SDPA op it
replaces), each computed by the torch op of that name in the tensors' own
dtype, on one thread. With Debian's python3-torch (1.13, /usr/bin/python3):

  sdpacheck fuzz --target aten \\
    --option "kernels=adapter:/usr/bin/python3 examples/adapters/torch_kernels.py"

It claims f32 and f64 (--dtypes adds bf16) and declares the numerics the
decomposition computes with: values stored and summed in the case dtype (f32
op-math for bf16, which the decomposition upcasts), sqrt(scale) multiplied into
q and into k. The SDPA op itself (a graph the passes left alone) is composed
of the same ops in that op-math: torch 1.13 has no scaled_dot_product_attention
(its private _scaled_dot_product_attention takes no scale and no GQA).

Deliberately wrong kernels, to see the accuracy check catch them:
  --mutant softmax-no-max       _safe_softmax as exp(x) / sum(exp(x)): the row max is not subtracted
  --mutant matmul-bf16-output   matmul's result rounded to bf16 before it is stored in its dtype
"""

import argparse
import math
import os
import sys

# oneDNN emits AMX instructions where the CPU reports AMX; some virtual
# machines raise SIGILL on them. A value the user set wins.
os.environ.setdefault("DNNL_MAX_CPU_ISA", "AVX512_CORE_BF16")
os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402

import sdpacheck_adapter as sa  # noqa: E402

MUTANTS = ("none", "softmax-no-max", "matmul-bf16-output")


def safe_softmax(x, dim):
    """aten._safe_softmax: softmax, and 0 for a row whose inputs are all -inf."""
    all_masked = torch.eq(x, -math.inf).all(dim, keepdim=True)
    return torch.where(all_masked, torch.zeros((), dtype=x.dtype), torch.softmax(x, dim))


def softmax_without_max(x, dim):
    e = torch.exp(x)
    all_masked = torch.eq(x, -math.inf).all(dim, keepdim=True)
    return torch.where(all_masked, torch.zeros((), dtype=x.dtype), e / e.sum(dim, keepdim=True))


def keep_mask(call, x, p):
    """The keep mask sdpacheck's own kernels draw for this run (its dropout stream)."""
    keep = sa.dropout_keep_mask(call.data_seed, x.numel(), p)
    return torch.tensor(keep, dtype=torch.bool).reshape(x.shape)


def dropout(x, keep, p):
    return torch.mul(x, torch.div(keep.to(x.dtype), 1.0 - p))


class Ops:
    """The kernels, with the mutant's softmax and matmul."""

    def __init__(self, mutant):
        self.softmax = softmax_without_max if mutant == "softmax-no-max" else safe_softmax
        self.bf16_matmul = mutant == "matmul-bf16-output"

    def matmul(self, a, b):
        r = torch.matmul(a, b)
        return r.to(torch.bfloat16).to(r.dtype) if self.bf16_matmul else r

    def sdpa(self, call):
        """scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, *, scale, enable_gqa),
        composed as the math backend composes it (f16/bf16 computed in f32)."""
        q, k, v = call.tensor(0), call.tensor(1), call.tensor(2)
        dtype = q.dtype
        if dtype in (torch.float16, torch.bfloat16):
            q, k, v = q.float(), k.float(), v.float()
        hq, hkv = q.shape[-3], k.shape[-3]
        if call.kwarg("enable_gqa", False) and hq != hkv:
            k = torch.repeat_interleave(k, hq // hkv, -3)
            v = torch.repeat_interleave(v, hq // hkv, -3)
        scale = call.kwarg("scale")
        scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
        sf = math.sqrt(abs(scale))
        attn = self.matmul(torch.mul(q, -sf if scale < 0 else sf), torch.mul(k.transpose(-2, -1), sf))

        def additive(keep):
            return torch.zeros_like(keep, dtype=attn.dtype).masked_fill(torch.logical_not(keep), -math.inf)

        if call.flag(5, False):
            attn = attn + additive(torch.ones((q.shape[-2], k.shape[-2]), dtype=torch.bool).tril())
        if call.has(3):
            m = call.tensor(3)
            attn = attn + (additive(m) if m.dtype == torch.bool else m.to(attn.dtype))
        attn = self.softmax(attn, -1)
        p = call.real(4, 0.0)
        if p > 0:
            attn = dropout(attn, keep_mask(call, attn, p), p)
        return self.matmul(attn, v).to(dtype)

    def native_dropout(self, call):
        """native_dropout(x, p, train) -> (output, mask)."""
        x, p = call.tensor(0), call.real(1)
        if not (call.flag(2, True) and p > 0):
            return x, torch.ones_like(x, dtype=torch.bool)
        keep = keep_mask(call, x, p)
        return dropout(x, keep, p), keep


def torch_errors_unsupported(fn):
    """A torch error (an op without a kernel for a dtype, a shape it rejects)
    is a gap of this set, as a LibTorch error is of sdpacheck's libtorch set."""

    def run(call):
        try:
            return fn(call)
        except RuntimeError as e:
            raise sa.KernelUnsupported("torch %s: %s" % (torch.__version__, str(e).split("\n")[0])) from None

    return run


def make_kernels(ops, dtypes):
    numerics = {d: sa.Numerics(d, accumulation="f32" if d == "bf16" else d, split_scale=True,
                               **({"operands": "f32", "scores": "f32", "probabilities": "f32"} if d == "bf16" else {}))
                for d in dtypes}
    k = sa.Kernels("torch_kernels.py (torch %s)" % torch.__version__, dtypes=dtypes, numerics=numerics)
    table = {
        "aten.transpose.int": lambda c: c.tensor(0).transpose(c.integer(1), c.integer(2)),
        "aten.permute.default": lambda c: c.tensor(0).permute(c.args[1]),
        "aten.contiguous.default": lambda c: c.tensor(0).contiguous(),
        "aten.clone.default": lambda c: c.tensor(0).clone(),
        "aten.reshape.default": lambda c: c.tensor(0).reshape(c.args[1]),
        "aten.view.default": lambda c: c.tensor(0).reshape(c.args[1]),
        "aten.expand.default": lambda c: c.tensor(0).expand(c.args[1]),
        "aten.unsqueeze.default": lambda c: c.tensor(0).unsqueeze(c.integer(1)),
        "aten._to_copy.default": lambda c: c.tensor(0).to(c.out_dtype()),
        "aten.repeat_interleave.self_int":
            lambda c: torch.repeat_interleave(c.tensor(0), c.integer(1), c.integer(2)),
        "aten.repeat.default": lambda c: c.tensor(0).repeat(c.args[1]),
        "aten.mul.Scalar": lambda c: torch.mul(c.tensor(0), c.real(1)),
        "aten.mul.Tensor": lambda c: torch.mul(c.tensor(0), c.tensor(1)),
        "aten.add.Tensor": lambda c: torch.add(c.tensor(0), c.tensor(1)),
        "aten.matmul.default": lambda c: ops.matmul(c.tensor(0), c.tensor(1)),
        "aten.ones.default": lambda c: torch.ones(c.args[0], dtype=c.out_dtype()),
        "aten.zeros_like.default": lambda c: torch.zeros_like(c.tensor(0), dtype=c.out_dtype()),
        "aten.tril.default": lambda c: torch.tril(c.tensor(0), c.integer(1, 0)),
        "aten.logical_not.default": lambda c: torch.logical_not(c.tensor(0)),
        "aten.masked_fill.Scalar": lambda c: torch.masked_fill(c.tensor(0), c.tensor(1), c.real(2)),
        "aten._safe_softmax.default": lambda c: ops.softmax(c.tensor(0), c.integer(1)),
        "aten.native_dropout.default": ops.native_dropout,
        "aten.scaled_dot_product_attention.default": ops.sdpa,
    }
    for op, fn in table.items():
        k.add(op, torch_errors_unsupported(fn))
    return k


def main():
    p = argparse.ArgumentParser(description="ATen ops on the installed PyTorch as an sdpacheck kernel adapter")
    p.add_argument("--mutant", choices=MUTANTS, default="none", help="a deliberately wrong kernel")
    p.add_argument("--dtypes", default="f32,f64", help="the case dtypes claimed: f32, f64, bf16")
    args = p.parse_args()
    dtypes = [d for d in args.dtypes.split(",") if d]
    for d in dtypes:
        if d not in ("f32", "f64", "bf16"):
            p.error("--dtypes: %r is not one of f32, f64, bf16" % d)
    torch.set_num_threads(1)  # tiny tensors: threads only add overhead, and the figures are per core
    sa.serve_kernels(make_kernels(Ops(args.mutant), dtypes), tensors="torch")


if __name__ == "__main__":
    main()
