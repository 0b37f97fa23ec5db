#!/usr/bin/python3
"""The flash toy's two attention ops as an sdpacheck kernel adapter, in plain
Python (the standard library only: it starts in milliseconds), with a fault to
inject for the tests of kernel adapter supervision. Attention is computed in
float64 and each output rounded to its dtype once. The fault fires on a call
whose q has Lq >= 5 at run time, so a campaign shrinks it to Lq 5:

  exit         exits with status 3, after a line on stderr
  segfault     kills itself with SIGSEGV
  hang         never answers
  garbage      answers a line that is not JSON
  wrong-id     answers with another request's id
  wrong-shape  answers an output one element longer than the node declares
  wrong-dtype  answers the f32 output as f64
  inexact      answers an f32 output holding 0.1, which is no f32 value
  recoverable  refuses (a checked error the runtime returns)
  fatal        refuses as an abort
  raise        the kernel raises ValueError (an undeclared exception)
  redeclare    exits as `exit` does, and claims f64 too at every start after
               the second (the first is sdpacheck's, to read the declaration)
  version      says protocol version 2 in its hello
"""

import argparse
import json
import math
import os
import signal
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "python"))

import sdpacheck_adapter as sa  # noqa: E402
from sdpacheck_adapter import protocol  # noqa: E402

FLASH = "aten._scaled_dot_product_flash_attention.default"
SDPA = "aten.scaled_dot_product_attention.default"
FAULT_LQ = 5


def to_f32(x):
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def rounded(dtype, x):
    return to_f32(x) if dtype == "f32" else x


def attention(call, q, k, v, dropout_p, causal, bottom_right, scale, gqa, lse_dtype=None):
    """softmax(q k^T * scale + causal mask) v over [batch..., H, L, D], in float64;
    dropout from sdpacheck's dropout stream; a fully masked row gives 0."""
    *batch, hq, lq, e = q.shape
    hkv, lkv, ev = k.shape[-3], k.shape[-2], v.shape[-1]
    if hq != hkv and not (gqa and hq % hkv == 0) and hkv != 1:
        raise sa.Recoverable("query heads %d and key heads %d do not match" % (hq, hkv))
    scale = 1.0 / math.sqrt(e) if scale is None else scale
    nb = 1
    for d in batch:
        nb *= d
    stream = call.dropout_stream()
    out, lse = [], []
    for b in range(nb):
        for h in range(hq):
            hk = h if hq == hkv else (0 if hkv == 1 and not gqa else h // (hq // hkv))
            kb, vb = (b * hkv + hk) * lkv, (b * hkv + hk) * lkv
            for i in range(lq):
                qr = q.data[((b * hq + h) * lq + i) * e:((b * hq + h) * lq + i + 1) * e]
                scores = []
                for j in range(lkv):
                    kr = k.data[(kb + j) * e:(kb + j + 1) * e]
                    x = sum(a * c for a, c in zip(qr, kr)) * scale
                    if causal and j > i + (lkv - lq if bottom_right else 0):
                        x = -math.inf
                    scores.append(x)
                mx = max(scores, default=-math.inf)
                if mx == -math.inf:
                    lse.append(-math.inf)
                    out.extend(sum(0.0 * v.data[(vb + j) * ev + c] for j in range(lkv)) for c in range(ev))
                    continue
                w = [math.exp(x - mx) for x in scores]
                total = sum(w)
                lse.append(mx + math.log(total))
                p = [x / total for x in w]
                if dropout_p > 0:
                    row = ((b * hq + h) * lq + i) * lkv
                    p = [x / (1 - dropout_p) if sa.dropout_keep(stream, row + j, dropout_p) else 0.0
                         for j, x in enumerate(p)]
                out.extend(sum(p[j] * v.data[(vb + j) * ev + c] for j in range(lkv)) for c in range(ev))
    dtype = call.out_dtype(0)
    outputs = [sa.Tensor(dtype, call.out_shape(0), [rounded(dtype, x) for x in out])]
    if lse_dtype:
        outputs.append(sa.Tensor(lse_dtype, call.out_shape(1), [rounded(lse_dtype, x) for x in lse]))
    return outputs


def make_kernels(fault, restarted):
    dtypes = ["f32", "f64"] if fault.kind == "redeclare" and restarted else ["f32"]
    kernels = sa.Kernels("flash_kernel_adapter.py", dtypes=dtypes,
                         numerics={"f32": sa.Numerics("f32", accumulation="f32", split_scale=True)})

    @kernels.op(FLASH)
    def flash(call):
        # (q, k, v, dropout_p, is_causal, return_debug_mask, *, scale): causal bottom-right, heads grouped
        fault.check(call)
        q, k, v = call.tensor(0), call.tensor(1), call.tensor(2)
        out = attention(call, q, k, v, call.real(3, 0.0), call.flag(4, False), True, call.kwarg("scale"), True,
                        lse_dtype=call.out_dtype(1))
        return fault.corrupt(out)

    @kernels.op(SDPA)
    def sdpa(call):
        # (q, k, v, attn_mask, dropout_p, is_causal, *, scale, enable_gqa): causal top-left
        fault.check(call)
        if call.has(3):
            raise sa.KernelUnsupported("this kernel takes no attn_mask")
        q, k, v = call.tensor(0), call.tensor(1), call.tensor(2)
        out = attention(call, q, k, v, call.real(4, 0.0), call.flag(5, False), False, call.kwarg("scale"),
                        call.kwarg("enable_gqa", False))
        return fault.corrupt(out)

    return kernels


class Fault:
    def __init__(self, kind):
        self.kind = kind
        self.fired = False  # on the call under way

    def at(self, *kinds):
        return self.fired and self.kind in kinds

    def check(self, call):
        self.fired = call.tensor(0).shape[-2] >= FAULT_LQ
        if self.at("exit", "redeclare"):
            sys.stderr.write("flash_kernel_adapter: exiting on a call with Lq >= 5\n")
            sys.stderr.flush()
            os._exit(3)
        if self.at("segfault"):
            os.kill(os.getpid(), signal.SIGSEGV)
        if self.at("hang"):
            while True:
                time.sleep(1)
        if self.at("recoverable"):
            raise sa.Recoverable("the flash kernel refuses Lq >= 5")
        if self.at("fatal"):
            raise sa.Fatal("the flash kernel aborts on Lq >= 5")
        if self.at("raise"):
            raise ValueError("the flash kernel fails on Lq >= 5")

    def corrupt(self, outputs):
        t = outputs[0]
        if self.at("wrong-shape"):
            t.shape[-1] += 1
            t.data.extend([0.0] * (len(t.data) // max(1, t.shape[-1] - 1)))
        if self.at("wrong-dtype"):
            t.dtype = "f64"
        if self.at("inexact") and t.data:
            t.data[0] = 0.1
        return outputs


def main():
    p = argparse.ArgumentParser(description="the flash toy's attention ops as an sdpacheck kernel adapter")
    p.add_argument("--fault", default="none")
    p.add_argument("--starts", help="a file to append a line to at each start")
    args = p.parse_args()
    restarted = False
    if args.starts:
        if os.path.exists(args.starts):
            with open(args.starts) as f:
                restarted = len(f.readlines()) >= 2
        with open(args.starts, "a") as f:
            f.write("%d\n" % os.getpid())
    fault = Fault(args.fault)
    server = sa.KernelServer(make_kernels(fault, restarted), tensors="plain")
    requests, out = protocol.protocol_streams()
    for line in requests:
        fault.fired = False
        reply = server.handle(json.loads(line))
        if reply["type"] == "hello" and fault.kind == "version":
            reply["version"] = 2
        if fault.at("garbage"):
            out.write("this is not json {\n")
            out.flush()
            continue
        if fault.at("wrong-id"):
            reply["id"] += 1000
        protocol.write_reply(out, reply)


if __name__ == "__main__":
    main()
