"""sdpacheck's graph as a torch.fx GraphModule, and back.

Each node becomes an fx node of the same name: placeholders (target: the
input's name), get_attr (the constant, a buffer of the module) and
call_function (target: ops.op(name)). node.meta['val'] is a TensorMeta
(torch dtype, shape of SymExpr, qparams), a tuple of them for a node of
several outputs, whose readers go through operator.getitem nodes as in
an exported graph. A name fx would change (a Python builtin such as
"sum", a keyword) is kept in node.meta['sdpacheck_name'] and written back.
Subgraphs (cond branches) are GraphModules in node.meta['sdpacheck_subgraphs'].
A node a pass adds needs meta['val']; make_node() sets it.
"""

import operator

import torch
import torch.fx as fx

from . import dtypes, ops
from .graph_json import (Constant, DType, Graph, GraphFormatError, Node, QParams, Ref, TensorMeta, dtype_name,
                         short_op_name)

NAME = "sdpacheck_name"
GETITEM = "sdpacheck_getitem"
SUBGRAPHS = "sdpacheck_subgraphs"
QPARAMS = "sdpacheck_qparams"  # on the GraphModule: constant name -> QParams
OUTPUT_NODE_NAME = "sdpacheck_output"  # fx's "output" stays free for the graph's own nodes


def graph_name(node):
    """The name sdpacheck knows an fx node by (decisions name it "%" + this)."""
    return node.meta.get(NAME, node.name)


def make_node(graph, target, args, kwargs=None, meta=None, name=None):
    """A call_function node with meta['val']; named like sdpacheck names a
    node (the op's short name, "transpose" for aten.transpose.int) unless
    `name` is given."""
    if name is None:
        name = short_op_name(ops.op_name(target) or getattr(target, "__name__", "node"))
    n = graph.create_node("call_function", target, tuple(args), dict(kwargs or {}), name=name)
    n.meta["val"] = meta
    return n


def _fx_meta(m):
    return TensorMeta(dtypes.torch_dtype(m.dtype.name), m.shape, m.qparams)


def _tensor_of(c):
    t = torch.tensor(c.data, dtype=torch.float64).reshape(c.shape)
    return t.to(dtypes.torch_dtype(c.dtype.name))


def to_fx(g):
    """A GraphModule of sdpacheck's Graph (graph_json.Graph)."""
    fxg = fx.Graph()
    root = torch.nn.Module()
    for name, c in g.constants.items():
        root.register_buffer(name, _tensor_of(c))
    made = {}      # graph name -> fx node
    getitems = {}  # (graph name, output) -> getitem fx node

    def value(a):
        if isinstance(a, Ref):
            n = made[a.node]
            if not isinstance(n.meta["val"], tuple):
                return n
            key = (a.node, a.output)
            if key not in getitems:
                gi = fxg.create_node("call_function", operator.getitem, (n, a.output), {}, name=a.node + "_getitem")
                gi.meta["val"] = n.meta["val"][a.output]
                gi.meta[GETITEM] = True
                getitems[key] = gi
            return getitems[key]
        if isinstance(a, DType):
            return dtypes.torch_dtype(a.name)
        if isinstance(a, tuple):  # a Shape
            return list(a)
        return a

    for n in g.nodes:
        if n.op == "placeholder":
            f = fxg.create_node("placeholder", n.args[0], name=n.name)
        elif n.op == "get_attr":
            f = fxg.create_node("get_attr", n.args[0], name=n.name)
        else:
            f = fxg.create_node("call_function", ops.op(n.op), tuple(value(a) for a in n.args),
                                {k: value(a) for k, a in n.kwargs.items()}, name=n.name)
        if f.name != n.name:
            f.meta[NAME] = n.name
        metas = [_fx_meta(m) for m in n.outputs]
        f.meta["val"] = metas[0] if len(metas) == 1 else tuple(metas)
        if n.subgraphs:
            f.meta[SUBGRAPHS] = [to_fx(s) for s in n.subgraphs]
        made[n.name] = f
    outs = [value(o) for o in g.outputs]
    fxg.create_node("output", "output", (outs[0] if len(outs) == 1 else tuple(outs),), name=OUTPUT_NODE_NAME)
    gm = fx.GraphModule(root, fxg)
    for name, c in g.constants.items():  # GraphModule keeps only the buffers get_attr reads
        if not hasattr(gm, name):
            gm.register_buffer(name, getattr(root, name))
    setattr(gm, QPARAMS, {name: c.qparams for name, c in g.constants.items() if c.qparams is not None})
    return gm


def _meta_of(node):
    val = node.meta.get("val")
    if val is None:
        raise GraphFormatError("node %%%s (%s) has no meta['val'] (a TensorMeta): sdpacheck needs every "
                               "value's dtype and shape" % (node.name, node.target))
    vals = val if isinstance(val, tuple) else (val,)
    out = []
    for v in vals:
        if isinstance(v, TensorMeta):
            out.append(TensorMeta(DType(dtype_name(v.dtype)), v.shape, v.qparams))
        elif hasattr(v, "dtype") and hasattr(v, "shape"):  # a tensor or a fake one
            out.append(TensorMeta(DType(dtype_name(v.dtype)), [int(d) for d in v.shape]))
        else:
            raise GraphFormatError("node %%%s: meta['val'] is %r, not a TensorMeta" % (node.name, v))
    return out


def _is_split(node):
    """A getitem reading one output of a node of several: a reference in sdpacheck's graph."""
    return (node.op == "call_function" and node.target is operator.getitem and isinstance(node.args[0], fx.Node)
            and isinstance(node.args[0].meta.get("val"), tuple) and isinstance(node.args[1], int))


def from_fx(gm):
    """sdpacheck's Graph of a GraphModule (what to_fx made, as a pass left it)."""
    def ref_of(a):
        if not isinstance(a, fx.Node):
            return None
        if _is_split(a):
            return Ref(graph_name(a.args[0]), a.args[1])
        return Ref(graph_name(a))

    def arg(a):
        r = ref_of(a)
        if r is not None:
            return r
        if dtypes.is_torch_dtype(a):
            return DType(dtypes.name_of_torch(a))
        if isinstance(a, (list, tuple)) and any(isinstance(x, fx.Node) for x in a):
            raise GraphFormatError("a list of values as an argument, which sdpacheck's graph cannot hold: %r" % (a,))
        return a

    g = Graph()
    qparams = getattr(gm, QPARAMS, {})
    for name, t in gm.named_buffers(recurse=False):
        data = t.detach().to(torch.float64).reshape(-1).tolist()
        g.constants[name] = Constant(DType(dtypes.name_of_torch(t.dtype)), list(t.shape), data, qparams.get(name))
    for n in gm.graph.nodes:
        if n.op == "output":
            outs = n.args[0] if isinstance(n.args[0], (list, tuple)) else (n.args[0],)
            g.outputs = [ref_of(o) for o in outs]
            continue
        if _is_split(n):
            continue
        if n.op == "placeholder":
            node = Node(graph_name(n), "placeholder", [n.target])
        elif n.op == "get_attr":
            node = Node(graph_name(n), "get_attr", [n.target])
        elif n.op == "call_function":
            op = ops.op_name(n.target)
            if op is None:
                raise GraphFormatError("node %%%s calls %r, which is not an op sdpacheck knows by name "
                                       "(use sdpacheck_adapter.ops)" % (n.name, n.target))
            node = Node(graph_name(n), op, [arg(a) for a in n.args], {k: arg(a) for k, a in n.kwargs.items()})
        else:
            raise GraphFormatError("node %%%s is a %s node, which sdpacheck's graph does not hold" % (n.name, n.op))
        node.outputs = _meta_of(n)
        node.subgraphs = [from_fx(s) for s in n.meta.get(SUBGRAPHS, [])]
        g.nodes.append(node)
    return g


__all__ = ["from_fx", "graph_name", "make_node", "to_fx", "QParams"]
