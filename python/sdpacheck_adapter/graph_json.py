"""The graph sdpacheck sends, as plain Python objects (no torch needed), and
its JSON form (harness/ir/graph_json.h, docs/adapters.md).

    graph: {"nodes": [node...], "outputs": [ref...], "constants": {name: tensor}}
    node:  {"name", "op", "args", "kwargs": [[key, arg]...], "outputs": [meta...], "subgraphs": [graph...]}
    arg:   null | bool | int | float | {"float": "inf"|"-inf"|"nan"} | {"ref": NAME, "output": I}
           | {"str": S} | {"sym": SIZE} | {"shape": [SIZE...]} | {"dtype": NAME}
"""

import math

from .symbolic import ShapeEnv, SymbolInfo, SymExpr

DTYPE_NAMES = ("f64", "f32", "f16", "bf16", "int8", "int32", "int64", "bool")


class GraphFormatError(ValueError):
    """The graph's JSON form breaks the format; the message names the field."""


class DType:
    """A dtype by sdpacheck's name ("f32", "bool"); in torch.fx mode dtypes are torch.dtype."""

    __slots__ = ("name",)

    def __init__(self, name):
        if name not in DTYPE_NAMES:
            raise GraphFormatError("expected a dtype, one of %s, got %r" % (", ".join(DTYPE_NAMES), name))
        self.name = name

    def __eq__(self, other):
        return isinstance(other, DType) and other.name == self.name

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return "DType(%r)" % self.name


class QParams:
    __slots__ = ("scale", "zero_point", "qmin", "qmax")

    def __init__(self, scale, zero_point, qmin=-128, qmax=127):
        self.scale, self.zero_point, self.qmin, self.qmax = scale, zero_point, qmin, qmax

    def to_json(self):
        return {"scale": self.scale, "zero_point": self.zero_point, "qmin": self.qmin, "qmax": self.qmax}


class TensorMeta:
    """What a node's output is: dtype, symbolic shape (a tuple of SymExpr), qparams.
    torch.fx passes read it as node.meta['val'] (a tuple of them for several outputs)."""

    __slots__ = ("dtype", "shape", "qparams")

    def __init__(self, dtype, shape, qparams=None):
        self.dtype = dtype
        self.shape = tuple(SymExpr.of(d) for d in shape)
        self.qparams = qparams

    def dim(self):
        return len(self.shape)

    def size(self, d=None):
        return self.shape if d is None else self.shape[d]

    def __repr__(self):
        return "TensorMeta(%s, [%s])" % (dtype_name(self.dtype), ", ".join(str(d) for d in self.shape))


class Shape(tuple):
    """A list of sizes as an argument (squeeze's dims, a view's shape)."""

    def __new__(cls, sizes=()):
        return super().__new__(cls, (SymExpr.of(d) for d in sizes))


class Ref:
    """Output `output` of the node named `node`."""

    __slots__ = ("node", "output")

    def __init__(self, node, output=0):
        self.node, self.output = node, output

    def __eq__(self, other):
        return isinstance(other, Ref) and (other.node, other.output) == (self.node, self.output)

    def __hash__(self):
        return hash((self.node, self.output))

    def __repr__(self):
        return "%" + self.node + ("[%d]" % self.output if self.output else "")


class Constant:
    """A graph constant (get_attr target): values as floats, row-major."""

    __slots__ = ("dtype", "shape", "data", "qparams")

    def __init__(self, dtype, shape, data, qparams=None):
        self.dtype, self.shape, self.data, self.qparams = dtype, list(shape), list(data), qparams


class Node:
    __slots__ = ("name", "op", "args", "kwargs", "outputs", "subgraphs")

    def __init__(self, name, op, args=(), kwargs=None, outputs=(), subgraphs=()):
        self.name, self.op = name, op
        self.args, self.kwargs = list(args), dict(kwargs or {})
        self.outputs, self.subgraphs = list(outputs), list(subgraphs)


class Graph:
    def __init__(self, nodes=(), outputs=(), constants=None):
        self.nodes, self.outputs, self.constants = list(nodes), list(outputs), dict(constants or {})

    def find(self, name):
        for i, n in enumerate(self.nodes):
            if n.name == name:
                return i
        return -1

    def unique_name(self, hint):
        """`hint`, or hint_1, hint_2, ... as sdpacheck names nodes."""
        if self.find(hint) < 0:
            return hint
        i = 1
        while self.find("%s_%d" % (hint, i)) >= 0:
            i += 1
        return "%s_%d" % (hint, i)


def dtype_name(dtype):
    """sdpacheck's name of a DType, a torch.dtype or a name."""
    if isinstance(dtype, DType):
        return dtype.name
    if isinstance(dtype, str) and dtype in DTYPE_NAMES:
        return dtype
    from . import dtypes  # torch dtypes, when torch is there

    return dtypes.name_of_torch(dtype)


def size_to_json(e):
    e = SymExpr.of(e)
    return e.constant() if e.is_constant() else str(e)


def _size_from_json(v, field):
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise GraphFormatError("%s: expected an integer or a size expression, got %r" % (field, v))
    try:
        return SymExpr.of(v)
    except ValueError as e:
        raise GraphFormatError("%s: %s" % (field, e)) from None


def float_to_json(x):
    if math.isnan(x):
        return {"float": "nan"}
    if math.isinf(x):
        return {"float": "-inf" if x < 0 else "inf"}
    return float(x)


_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def arg_to_json(a, ref_of, is_dtype=lambda a: False):
    """`ref_of(a)`: a node reference's (name, output), or None when `a` is none."""
    r = ref_of(a)
    if r is not None:
        name, output = r
        return {"ref": name, "output": output} if output else {"ref": name}
    if a is None or isinstance(a, bool):
        return a
    if isinstance(a, int):
        return a
    if isinstance(a, float):
        return float_to_json(a)
    if isinstance(a, str):
        return {"str": a}
    if isinstance(a, SymExpr):
        return {"sym": size_to_json(a)}
    if isinstance(a, DType) or is_dtype(a):
        return {"dtype": dtype_name(a)}
    if isinstance(a, (list, tuple)) and all(isinstance(d, (int, SymExpr)) and not isinstance(d, bool) for d in a):
        return {"shape": [size_to_json(d) for d in a]}
    raise GraphFormatError("an argument sdpacheck's graph cannot hold: %r (%s)" % (a, type(a).__name__))


def arg_from_json(v, field, ref):
    """`ref(name, output, field)` makes a reference."""
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if not isinstance(v, dict) or not v:
        raise GraphFormatError("%s: expected null, a boolean, a number or a tagged object, got %r" % (field, v))
    if "ref" in v:
        return ref(v["ref"], v.get("output", 0), field)
    if len(v) != 1:
        raise GraphFormatError("%s: a tagged argument has one key, got %d" % (field, len(v)))
    (tag, body), = v.items()
    if tag == "float" and body in _NONFINITE:
        return _NONFINITE[body]
    if tag == "str" and isinstance(body, str):
        return body
    if tag == "sym":
        return _size_from_json(body, field + ".sym")
    if tag == "shape" and isinstance(body, list):
        return Shape(_size_from_json(d, "%s.shape[%d]" % (field, i)) for i, d in enumerate(body))
    if tag == "dtype":
        return DType(body)
    raise GraphFormatError("%s: unexpected argument %r" % (field, v))


def _meta_from_json(v, field):
    q = v.get("qparams")
    shape = [_size_from_json(d, "%s.shape[%d]" % (field, i)) for i, d in enumerate(v["shape"])]
    return TensorMeta(DType(v["dtype"]), shape, QParams(q["scale"], q["zero_point"], q["qmin"], q["qmax"]) if q else None)


def meta_to_json(m):
    j = {"dtype": dtype_name(m.dtype), "shape": [size_to_json(d) for d in m.shape]}
    if m.qparams is not None:
        j["qparams"] = m.qparams.to_json()
    return j


def constant_from_json(v, field):
    q = v.get("qparams")
    data = [_NONFINITE[x] if isinstance(x, str) else float(x) for x in v["data"]]
    return Constant(DType(v["dtype"]), v["shape"], data, QParams(**q) if q else None)


def constant_to_json(c):
    data = [x if math.isfinite(x) else ("nan" if math.isnan(x) else ("-inf" if x < 0 else "inf")) for x in c.data]
    j = {"dtype": dtype_name(c.dtype), "shape": list(c.shape), "data": data}
    if c.qparams is not None:
        j["qparams"] = c.qparams.to_json()
    return j


def graph_from_json(j, field="graph"):
    """A Graph of plain objects; references become Ref."""
    try:
        names = {}
        constants = j.get("constants", {})
        g = Graph(constants={k: constant_from_json(c, "%s.constants.%s" % (field, k)) for k, c in constants.items()})

        def ref(name, output, where):
            if name not in names:
                raise GraphFormatError("%s: no node named %r before this point" % (where, name))
            return Ref(name, output)

        for i, nj in enumerate(j["nodes"]):
            f = "%s.nodes[%d]" % (field, i)
            n = Node(nj["name"], nj["op"],
                     [arg_from_json(a, "%s.args[%d]" % (f, k), ref) for k, a in enumerate(nj["args"])],
                     {kv[0]: arg_from_json(kv[1], "%s.kwargs[%d]" % (f, k), ref)
                      for k, kv in enumerate(nj.get("kwargs", []))},
                     [_meta_from_json(o, "%s.outputs[%d]" % (f, k)) for k, o in enumerate(nj["outputs"])],
                     [graph_from_json(s, "%s.subgraphs[%d]" % (f, k)) for k, s in enumerate(nj.get("subgraphs", []))])
            names[n.name] = n
            g.nodes.append(n)
        g.outputs = [ref(o["ref"], o.get("output", 0), "%s.outputs[%d]" % (field, i))
                     for i, o in enumerate(j["outputs"])]
        return g
    except (KeyError, TypeError, AttributeError) as e:
        raise GraphFormatError("%s: not sdpacheck's graph form (%s: %s)" % (field, type(e).__name__, e)) from None


def graph_to_json(g):
    def ref_of(a):
        return (a.node, a.output) if isinstance(a, Ref) else None

    nodes = []
    for n in g.nodes:
        nj = {"name": n.name, "op": n.op, "args": [arg_to_json(a, ref_of) for a in n.args],
              "outputs": [meta_to_json(m) for m in n.outputs]}
        if n.kwargs:
            nj["kwargs"] = [[k, arg_to_json(a, ref_of)] for k, a in n.kwargs.items()]
        if n.subgraphs:
            nj["subgraphs"] = [graph_to_json(s) for s in n.subgraphs]
        nodes.append(nj)
    j = {"nodes": nodes, "outputs": [arg_to_json(o, ref_of) for o in g.outputs]}
    if g.constants:
        j["constants"] = {k: constant_to_json(c) for k, c in g.constants.items()}
    return j


def shape_env_from_json(j):
    return ShapeEnv({name: SymbolInfo(s["hint"], s["min"], s["max"]) for name, s in j.items()})


def short_op_name(op):
    """"aten.mul.Scalar" -> "mul": the name sdpacheck gives a node after its op."""
    parts = op.split(".")
    return parts[1] if len(parts) > 1 else op
