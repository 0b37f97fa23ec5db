"""TEST DOUBLE, not ExecuTorch.

sdpacheck's repro tests (reports/repro_test.sh) put the folder above this one
on PYTHONPATH to run the ExecuTorch branch of a repro script on a machine
without ExecuTorch. It holds only the two modules the llm target's script
imports: executorch.extension.llm.custom_ops.custom_ops (empty) and
executorch.extension.llm.export.export_passes, whose ReplaceSDPAWithCustomSDPAPass
rewrites as the environment variable SDPACHECK_TEST_REWRITE says (see that
file). Nothing here is ExecuTorch's code or behaviour.

Debian's PyTorch 1.13 predates torch.export. Where torch lacks it, importing
this package installs a stand-in torch.export.export that hands the module
back unexported: the stub pass never reads a graph.
"""
import types

import torch

__version__ = "0.0.0+sdpacheck-test-double"


class _Unexported:
    def __init__(self, module, args):
        self._module, self.args = module, args

    def module(self):
        return self._module


if not hasattr(torch, "export"):
    torch.export = types.SimpleNamespace(export=lambda module, args, strict=True: _Unexported(module, args))
