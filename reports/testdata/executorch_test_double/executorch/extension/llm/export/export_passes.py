"""TEST DOUBLE of executorch.extension.llm.export.export_passes (see
executorch/__init__.py).

ReplaceSDPAWithCustomSDPAPass(assume_causal_mask)(module).graph_module is a
program that computes what SDPACHECK_TEST_REWRITE names, from the call's
inputs (q, k, v in [B, H, L, D]; no mask, not causal, Hq == Hkv, default
scale: the only calls the tests hand it):
  keep        attention over every key: what the original call computes
  first-keys  attention over the first Lq keys only, as custom_sdpa without a
              mask attends (start_pos 0)
  raise       the pass raises AssertionError
  abort       the program calls os.abort(), as a fatal kernel check would
"""
import math
import os
from types import SimpleNamespace

import torch


def _attention(q, k, v):
    s = (q.double() @ k.double().transpose(-2, -1)) / math.sqrt(q.shape[-1])
    return (torch.softmax(s, -1) @ v.double()).to(q.dtype)


class ReplaceSDPAWithCustomSDPAPass:
    def __init__(self, assume_causal_mask=False):
        self.assume_causal_mask = assume_causal_mask

    def __call__(self, module):
        mode = os.environ.get("SDPACHECK_TEST_REWRITE", "keep")
        if mode == "raise":
            raise AssertionError("test double: the pass raises")

        def program(q, k, v, mask=None):
            if mask is not None:
                raise NotImplementedError("test double: masked calls are not modelled")
            if mode == "abort":
                os.abort()
            if mode == "first-keys":
                k, v = k[..., : q.shape[-2], :], v[..., : q.shape[-2], :]
            return _attention(q, k, v)

        return SimpleNamespace(graph_module=program, modified=True)
