"""Run a graph pass written in Python under sdpacheck (docs/adapters.md).

    import sdpacheck_adapter as sa
    from sdpacheck_adapter.ops import aten

    def my_pass(gm, ctx):                      # a torch.fx GraphModule
        for node in list(gm.graph.nodes):
            if node.target != aten.scaled_dot_product_attention.default:
                continue
            guard = ctx.guard(sa.graph_name(node))
            guard.rule("rank", len(node.args[0].meta["val"].shape) == 4)
            if ctx.decide(guard):
                ...                            # rewrite, with sa.make_node
    sa.serve(my_pass)

The standard library only, plus torch for the torch.fx mode (serve(fx=False)
hands the pass sdpacheck's graph as plain objects instead).

Kernels written in Python (a function per op name) are served with
sa.serve_kernels(sa.Kernels(...)): see kernels.py.
"""

from .graph_json import (DType, Graph, GraphFormatError, Node, QParams, Ref, Shape, TensorMeta, dtype_name,
                         graph_from_json, graph_to_json, short_op_name)
from .guard import Decision, GuardContext, RewriteControl, RuleOutcome
from .kernels import (Fatal, KernelCall, KernelRefusal, Kernels, KernelServer, KernelUnsupported, Numerics, Output,
                      Recoverable, Tensor, serve_kernels)
from .protocol import PROTOCOL_VERSION, PassContext, PassFailure, Server, Unsupported, serve
from .streams import CounterStream, dropout_keep, dropout_keep_mask
from .symbolic import Fact, ShapeEnv, SymExpr, shape_str

_FX_NAMES = ("from_fx", "graph_name", "make_node", "to_fx")


def __getattr__(name):
    # torch.fx is imported on first use: a plain-graph adapter starts without
    # importing torch (seconds), and runs where torch is not installed.
    if name in _FX_NAMES:
        from . import fx_graph

        return getattr(fx_graph, name)
    raise AttributeError("module 'sdpacheck_adapter' has no attribute %r" % name)
