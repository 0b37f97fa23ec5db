#!/usr/bin/python3
"""ReplaceSDPAWithCustomSDPAPass (ExecuTorch extension/llm/export/export_passes.py)
on torch.fx, under the guard policies of sdpacheck's llm target: `upstream`
(the pass as ExecuTorch main has it, quirks included) and `contract`
(rewrite exactly when custom_sdpa computes what aten computes at every size
the symbols allow, semantics/passes.md §3). The same pass as the llm
target's C++ model (backends/llm/replace_sdpa_pass.cpp), written against
torch.fx nodes, run by sdpacheck through the adapter protocol:

    sdpacheck fuzz --target llm --option guard=contract \\
        --option "pass=adapter:/usr/bin/python3 examples/adapters/llm_guards.py"

The policy and the pass's constructor argument come from the target's
options (guard, assume_causal_mask, weaken, miseval) in the hello;
--weaken RULE switches one contract rule off here, in the Python code.

On torch 1.13 aten.scaled_dot_product_attention and aten.squeeze.dims do
not exist yet: sdpacheck_adapter.ops gives stand-in targets by name, and
node.meta['val'] is a TensorMeta whose shape holds sdpacheck's symbolic
sizes (SymExpr), as export's fake tensors hold SymInts.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402

import sdpacheck_adapter as sa  # noqa: E402
from sdpacheck_adapter.ops import aten, llama  # noqa: E402

SDPA = aten.scaled_dot_product_attention.default
CUSTOM_SDPA = llama.custom_sdpa.default

CONTRACT_RULES = ("rank", "dtype", "heads", "head-dims", "dropout", "query-length", "causal-lengths", "causal-scale",
                  "unmasked-lengths", "mask-shape", "mask-dtype", "static-facts", "assume-causal-first")
ATTENTION_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


class GuardOnDataDependentSymNode(Exception):
    """What export raises when a guard asks about an unbacked size."""


def meta(node):
    return node.meta["val"]


def meta_assert(what):
    # custom_sdpa's Meta kernel (_validate_params) runs while the pass builds the call.
    raise sa.PassFailure("AssertionError in custom_sdpa meta (_validate_params): " + what)


def cpp_float(x):
    """A double as std::to_string writes it ("%f"), as the C++ model's rule details do."""
    return "%f" % x


class SdpaCall:
    """The pieces of an aten SDPA node as export writes them:
    (q, k, v, attn_mask, dropout_p, is_causal, *, scale, enable_gqa)."""

    def __init__(self, node):
        a = node.args
        self.q, self.k, self.v = a[0], a[1], a[2]
        self.mask = a[3] if len(a) > 3 and isinstance(a[3], torch.fx.Node) else None
        self.dropout_p = a[4] if len(a) > 4 else 0.0
        self.is_causal = a[5] if len(a) > 5 else False
        scale = node.kwargs.get("scale")
        self.scale = scale if isinstance(scale, float) else None
        gqa = node.kwargs.get("enable_gqa")
        self.enable_gqa = gqa if isinstance(gqa, bool) else False


class BoundSdpaCall(SdpaCall):
    """The same, bound as aten binds the schema: attn_mask, dropout_p and
    is_causal by position or by keyword (the contract reads the call so)."""

    def __init__(self, node):
        super().__init__(node)
        kw = node.kwargs
        if isinstance(kw.get("attn_mask"), torch.fx.Node):
            self.mask = kw["attn_mask"]
        if isinstance(kw.get("dropout_p"), float):
            self.dropout_p = kw["dropout_p"]
        if isinstance(kw.get("is_causal"), bool):
            self.is_causal = kw["is_causal"]


def swap12(shape):
    s = list(shape)
    if len(s) >= 3:
        s[1], s[2] = s[2], s[1]
    return s


class Emitter:
    """The nodes both policies emit, before the SDPA node."""

    def __init__(self, graph):
        self.graph = graph

    def swap_seq_and_heads(self, x, name):
        """aten.transpose.int(x, 1, 2), then aten.contiguous.default; rank < 3 raises as transpose does."""
        m = meta(x)
        rank = len(m.shape)
        if rank < 3:
            raise IndexError("Dimension out of range (expected to be in range of [-%d, %d], but got 2)"
                             % (rank, rank - 1))
        out = sa.TensorMeta(m.dtype, swap12(m.shape))
        t = sa.make_node(self.graph, aten.transpose.int, (x, 1, 2), meta=out, name=name)
        return sa.make_node(self.graph, aten.contiguous.default, (t,), meta=out, name=name + "_contiguous")

    def squeeze_leading(self, mask):
        """aten.squeeze.dims over every leading dim: [1, ..., 1, Lq, Lkv] -> [Lq, Lkv]."""
        m = meta(mask)
        dims = list(range(len(m.shape) - 2))
        return sa.make_node(self.graph, aten.squeeze.dims, (mask, dims), meta=sa.TensorMeta(m.dtype, m.shape[-2:]))

    def bool_to_additive(self, mask):
        """aten.where.Scalar(mask, 0.0, -inf): keep -> 0, drop -> -inf, f32."""
        return sa.make_node(self.graph, aten.where.Scalar, (mask, 0.0, -math.inf),
                            meta=sa.TensorMeta(torch.float32, meta(mask).shape))

    def to_f32(self, x):
        return sa.make_node(self.graph, aten._to_copy.default, (x,), {"dtype": torch.float32},
                            meta=sa.TensorMeta(torch.float32, meta(x).shape))

    def custom_sdpa(self, q, k, v, mask, call, is_causal):
        """llama.custom_sdpa(q, k, v, start_pos=0, mask, dropout, is_causal, scale), back to [B, H, L, D]."""
        out = sa.make_node(self.graph, CUSTOM_SDPA, (q, k, v, 0, mask, call.dropout_p, is_causal, call.scale),
                           meta=meta(q), name="custom_sdpa")
        return self.swap_seq_and_heads(out, "output")


def meta_check_mask(m):
    if len(m.shape) != 2:
        meta_assert("Expected attn_mask to be 2 dimensional but got %d dimensions." % len(m.shape))
    if m.dtype not in (torch.float32, torch.float16):
        meta_assert("Expected attn_mask to be float but got %s" % m.dtype)


def meta_check_qkv(q, k, v, env):
    """q's dtype, and key.size() == value.size(), a symbolic size answered on its hint as fake tensors do."""
    t = meta(q).dtype
    if t not in ATTENTION_DTYPES:
        meta_assert("Expected query to be float32, bfloat16, or float16 but got %s" % t)
    ks, vs = meta(k).shape, meta(v).shape
    same = len(ks) == len(vs) and all(a == b or env.on_hint(sa.Fact(a, "==", b)) is True for a, b in zip(ks, vs))
    if not same:
        meta_assert("Key cache and value cache must have same size but got torch.Size(%s) and torch.Size(%s)"
                    % (sa.shape_str(ks), sa.shape_str(vs)))


class Config:
    def __init__(self, options, weaken_here):
        self.policy = options.get("guard", "contract")
        self.assume_causal_mask = options.get("assume_causal_mask", "false") == "true"
        weaken = weaken_here or options.get("weaken", "none")
        self.weakened = None if weaken == "none" else weaken
        miseval = options.get("miseval", "none")
        self.misevaluated = None if miseval == "none" else miseval
        for r in (self.weakened, self.misevaluated):
            if r is not None and r not in CONTRACT_RULES:
                raise ValueError("no contract rule %r (expected one of %s)" % (r, ", ".join(CONTRACT_RULES)))


def squeezable_on_hints(m, env, guard):
    """"All leading dims are 1", asked of fake tensors: a symbolic size is compared on its hint
    (recorded as an assumption); an unbacked one raises."""
    for size in m.shape[:-2]:
        one = sa.Fact(size, "==", 1)
        if not size.is_constant() and env.on_hint(one) is None:
            raise GuardOnDataDependentSymNode("Could not guard on data-dependent expression Eq(%s, 1)" % size)
        if not guard.on_hint(one, "mask-rank"):
            return False
    return True


def contract_guard(node, ctx, cfg):
    """The contract policy's verdict on one SDPA node."""
    guard = ctx.guard(sa.graph_name(node))
    call = BoundSdpaCall(node)
    q, k, v = meta(call.q), meta(call.k), meta(call.v)

    def weak(r):
        return cfg.weakened == r

    def rule(r, ok, detail):
        return guard.rule(r, ok or weak(r), detail + " (rule weakened)" if weak(r) else detail)

    def fact(a, rel, b, r):
        """A size fact: statically known, or (static-facts weakened) true on the hints."""
        f = sa.Fact(a, rel, b)
        return guard.on_hint(f, r) if weak("static-facts") else guard.known(f)

    mask, is_causal = call.mask, call.is_causal
    if cfg.assume_causal_mask and not weak("assume-causal-first"):
        mask, is_causal = None, True

    rank4 = len(q.shape) == 4 and len(k.shape) == 4 and len(v.shape) == 4
    rule("rank", rank4, "q, k, v ranks %d, %d, %d" % (len(q.shape), len(k.shape), len(v.shape)))
    rule("dtype", q.dtype in ATTENTION_DTYPES, "dtype " + sa.dtype_name(q.dtype))
    hq, hkv = q.shape[-3], k.shape[-3]
    heads = hq == hkv or hkv == 1 or (call.enable_gqa and hq.is_constant() and hkv.is_constant()
                                      and hq.constant() % hkv.constant() == 0)
    rule("heads", heads, "Hq %s, Hkv %s" % (hq, hkv))
    rule("head-dims", q.shape[-1] == v.shape[-1], "E %s, Ev %s" % (q.shape[-1], v.shape[-1]))
    rule("dropout", call.dropout_p == 0.0, "dropout_p " + cpp_float(call.dropout_p))
    lq, lkv = q.shape[-2], k.shape[-2]
    rule("query-length", fact(lq, ">=", 1, "query-length"), "Lq %s >= 1" % lq)
    if is_causal:
        bound = lkv + 1 if cfg.misevaluated == "causal-lengths" else lkv  # self-test: off by one
        rule("causal-lengths", fact(lq, "<=", bound, "causal-lengths"), "Lq %s <= Lkv %s" % (lq, lkv))
        rule("causal-scale", call.scale is None or call.scale > 0,
             "scale " + cpp_float(call.scale) if call.scale is not None else "default scale")
    elif mask is None:
        rel = "<=" if cfg.misevaluated == "unmasked-lengths" else "=="  # self-test: Lq <= Lkv
        rule("unmasked-lengths", fact(lq, rel, lkv, "unmasked-lengths"), "Lq %s == Lkv %s" % (lq, lkv))
    if mask is not None:
        m = meta(mask)
        shape_ok = len(m.shape) >= 2
        for d in m.shape[:-2]:
            if not shape_ok:
                break
            shape_ok = fact(d, "==", 1, "mask-shape")
        shape_ok = shape_ok and fact(m.shape[-2], "==", lq, "mask-shape") and fact(m.shape[-1], "==", lkv, "mask-shape")
        rule("mask-shape", shape_ok, "mask %s vs [%s, %s]" % (sa.shape_str(m.shape), lq, lkv))
        rule("mask-dtype", m.dtype in (torch.bool,) + ATTENTION_DTYPES, "mask dtype " + sa.dtype_name(m.dtype))
    return guard


def upstream(graph, node, ctx, cfg):
    """export_passes.py: transposes first, then the rank check, then the mask."""
    emit = Emitter(graph)
    guard = ctx.guard(sa.graph_name(node))
    call = SdpaCall(node)
    q = emit.swap_seq_and_heads(call.q, "q_bshd")
    k = emit.swap_seq_and_heads(call.k, "k_bshd")
    v = emit.swap_seq_and_heads(call.v, "v_bshd")
    rank4 = all(len(meta(x).shape) == 4 for x in (call.q, call.k, call.v))
    guard.rule("rank", rank4, "" if rank4 else "ReplaceSDPAWithCustomSDPAPass only supports 4D QKV inputs.")
    mask, is_causal = call.mask, call.is_causal
    if cfg.assume_causal_mask:
        mask, is_causal = None, True
    if rank4 and mask is not None and not squeezable_on_hints(meta(mask), ctx.shape_env, guard):
        guard.rule("mask-rank", False, "ReplaceSDPAWithCustomSDPAPass only supports 2D attention mask.")
    if not ctx.decide(guard):
        return None  # the transposes stay, dead
    if mask is not None:
        was_bool = meta(mask).dtype == torch.bool
        if len(meta(mask).shape) > 2:
            mask = emit.squeeze_leading(mask)
        if was_bool:
            mask = emit.bool_to_additive(mask)
    meta_check_qkv(q, k, v, ctx.shape_env)
    if mask is not None:
        meta_check_mask(meta(mask))
    return emit.custom_sdpa(q, k, v, mask, call, is_causal)


def contract(graph, node, ctx, cfg):
    if not ctx.decide(contract_guard(node, ctx, cfg)):
        return None
    emit = Emitter(graph)
    call = BoundSdpaCall(node)
    mask, is_causal = call.mask, call.is_causal
    if cfg.assume_causal_mask:
        mask, is_causal = None, True
    if mask is not None:
        if len(meta(mask).shape) > 2:
            mask = emit.squeeze_leading(mask)
        t = meta(mask).dtype
        if cfg.weakened != "mask-dtype":
            if t == torch.bool:
                mask = emit.bool_to_additive(mask)
            elif t in (torch.float16, torch.bfloat16):
                mask = emit.to_f32(mask)
    q = emit.swap_seq_and_heads(call.q, "q_bshd")
    k = emit.swap_seq_and_heads(call.k, "k_bshd")
    v = emit.swap_seq_and_heads(call.v, "v_bshd")
    meta_check_qkv(q, k, v, ctx.shape_env)
    if mask is not None:
        meta_check_mask(meta(mask))
    return emit.custom_sdpa(q, k, v, mask, call, is_causal)


def replace_sdpa_with_custom_sdpa(weaken_here):
    def run(gm, ctx):
        cfg = Config(ctx.options, weaken_here)
        policy = upstream if cfg.policy == "upstream" else contract
        for node in list(gm.graph.nodes):
            if node.target != SDPA:
                continue
            with gm.graph.inserting_before(node):
                out = policy(gm.graph, node, ctx, cfg)
            if out is not None:
                node.replace_all_uses_with(out)
                gm.graph.erase_node(node)
        return gm

    return run


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--weaken", default=None, choices=CONTRACT_RULES,
                   help="switch one contract rule off in this Python guard (self-tests)")
    args = p.parse_args()
    sa.serve(replace_sdpa_with_custom_sdpa(args.weaken), name="llm_guards.py")


if __name__ == "__main__":
    main()
