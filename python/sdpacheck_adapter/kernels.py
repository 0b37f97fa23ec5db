"""Kernels written in Python as an sdpacheck kernel set (docs/adapters.md, the
kernel kind): a function per op name, computing a node's outputs from its
arguments as sdpacheck resolved them at one run.

    import sdpacheck_adapter as sa

    kernels = sa.Kernels("my_kernels.py", dtypes=["f32"],
                         numerics={"f32": sa.Numerics("f32", accumulation="f32")})

    @kernels.op("aten.mul.Scalar")
    def mul(call):
        return call.tensor(0) * call.real(1)        # a torch tensor (tensors="torch")

    sa.serve_kernels(kernels, tensors="torch")

A kernel returns one tensor, or a list or tuple of them for a node of several
outputs, each in the dtype and shape the node declares (call.outputs): sdpacheck
checks both, and that each value is one of the dtype. `sa.Recoverable`,
`sa.KernelUnsupported` and `sa.Fatal` are the refusals a kernel may raise (a
checked error the runtime returns, a dtype or form not taken, an abort); any
other exception is reported as the kernel raising it.
"""

import math
import os
import sys
import traceback

from . import protocol, streams
from .graph_json import DTYPE_NAMES

_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class Numerics:
    """How the kernels compute a case of one dtype (harness/check/numerics.h): the
    dtype values are stored in, the one sums accumulate in, and where the
    stages in between are rounded (left out: the storage dtype); split_scale:
    sqrt(|scale|) multiplied into q and into k. The accuracy bound derives
    from it."""

    def __init__(self, storage, accumulation, operands=None, scores=None, probabilities=None, split_scale=False):
        for d in (storage, accumulation, operands, scores, probabilities):
            if d is not None and d not in DTYPE_NAMES:
                raise ValueError("Numerics: %r is not one of %s" % (d, ", ".join(DTYPE_NAMES)))
        self.storage, self.accumulation = storage, accumulation
        self.operands, self.scores, self.probabilities = operands, scores, probabilities
        self.split_scale = split_scale

    def to_json(self):
        j = {"storage": self.storage, "accumulation": self.accumulation, "split_scale": bool(self.split_scale)}
        for key in ("operands", "scores", "probabilities"):
            if getattr(self, key) is not None:
                j[key] = getattr(self, key)
        return j


class KernelRefusal(Exception):
    kind = None


class Recoverable(KernelRefusal):
    """A checked error the runtime returns (ET_KERNEL_CHECK): on a rewritten
    graph sdpacheck counts it an invalid rewrite."""

    kind = "recoverable"


class KernelUnsupported(KernelRefusal):
    """A declared gap: a dtype or a form the kernel does not take."""

    kind = "unsupported"


class Fatal(KernelRefusal):
    """An abort (ET_CHECK_MSG): sdpacheck reports a crash."""

    kind = "fatal"


class Tensor:
    """A tensor without torch: dtype name, shape (a list of ints) and the
    values as floats in row-major order."""

    __slots__ = ("dtype", "shape", "data")

    def __init__(self, dtype, shape, data):
        self.dtype, self.shape, self.data = dtype, list(shape), list(data)

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


class Output:
    """What the node declares of one output at this run: dtype and shape."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype, shape):
        self.dtype, self.shape = dtype, tuple(shape)


class KernelCall:
    """One node to compute: its name and op, the arguments (tensors, numbers,
    int lists as tuples, dtypes, strings, None), the keyword arguments in their
    order, the outputs it declares, and the run's data seed."""

    def __init__(self, node, op, args, kwargs, outputs, data_seed):
        self.node, self.op, self.args, self.kwargs = node, op, args, kwargs
        self.outputs, self.data_seed = outputs, data_seed

    def has(self, i):
        return i < len(self.args) and self.args[i] is not None

    def tensor(self, i):
        return self.args[i]

    def real(self, i, default=None):
        return float(self.args[i]) if self.has(i) else default

    def integer(self, i, default=None):
        return int(self.args[i]) if self.has(i) else default

    def flag(self, i, default=None):
        return bool(self.args[i]) if self.has(i) else default

    def kwarg(self, key, default=None):
        v = self.kwargs.get(key)
        return default if v is None else v

    def out_dtype(self, i=0):
        return self.outputs[i].dtype

    def out_shape(self, i=0):
        return self.outputs[i].shape

    def dropout_stream(self):
        """The stream sdpacheck's own dropout kernels draw their keep mask from."""
        return streams.CounterStream(self.data_seed, "dropout")


class Kernels:
    """The kernel set: a function per op, the case dtypes it claims, and its
    numerics for each (a claimed dtype without numerics is run but its
    accuracy is not judged)."""

    def __init__(self, name=None, dtypes=("f32",), numerics=None):
        self.name = name or os.path.basename(sys.argv[0])
        self.dtypes, self.numerics = list(dtypes), dict(numerics or {})
        self.kernels = {}

    def add(self, op, fn):
        self.kernels[op] = fn

    def op(self, *ops):
        """Decorator: the function computes each of `ops`."""

        def register(fn):
            for op in ops:
                self.add(op, fn)
            return fn

        return register

    def declaration(self):
        return {"ops": list(self.kernels), "dtypes": self.dtypes,
                "numerics": {d: n.to_json() for d, n in self.numerics.items()}}


class _PlainTensors:
    """Tensors as Tensor objects; dtypes as sdpacheck's names."""

    @staticmethod
    def dtype(name):
        return name

    @staticmethod
    def from_json(t):
        return Tensor(t["dtype"], t["shape"], [_NONFINITE[x] if isinstance(x, str) else float(x) for x in t["data"]])

    @staticmethod
    def to_json(t):
        if not isinstance(t, Tensor):
            raise TypeError("a kernel in the plain mode returns sdpacheck_adapter.Tensor, got %s" % type(t).__name__)
        return {"dtype": t.dtype, "shape": list(t.shape), "data": [_number(x) for x in t.data]}


class _TorchTensors:
    """Tensors as torch tensors of their dtype; dtypes as torch.dtype."""

    def __init__(self):
        import torch

        from . import dtypes

        self.torch, self.dtypes = torch, dtypes

    def dtype(self, name):
        return self.dtypes.torch_dtype(name)

    def from_json(self, t):
        data = [_NONFINITE[x] if isinstance(x, str) else x for x in t["data"]]
        x = self.torch.tensor(data, dtype=self.torch.float64).reshape(t["shape"])
        dtype = self.dtypes.torch_dtype(t["dtype"])
        return x if dtype == self.torch.float64 else x.to(dtype)

    def to_json(self, t):
        if not isinstance(t, self.torch.Tensor):
            raise TypeError("a kernel in the torch mode returns torch tensors, got %s" % type(t).__name__)
        data = t.detach().reshape(-1).to(self.torch.float64).tolist()
        if t.is_floating_point() and not bool(self.torch.isfinite(t).all()):
            data = [_number(x) for x in data]
        return {"dtype": self.dtypes.name_of_torch(t.dtype), "shape": list(t.shape), "data": data}


def _number(x):
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("-inf" if x < 0 else "inf")


def _value_from_json(v, tensors):
    if v is None or isinstance(v, (bool, int, float)):
        return v
    (tag, body), = v.items()
    if tag == "tensor":
        return tensors.from_json(body)
    if tag == "float":
        return _NONFINITE[body]
    if tag == "str":
        return body
    if tag == "shape":
        return tuple(body)
    if tag == "dtype":
        return tensors.dtype(body)
    raise ValueError("an argument of a kind this library does not know: %r" % (v,))


class KernelServer:
    """Answers one request at a time: handle(msg) is the reply to a request."""

    def __init__(self, kernels, tensors="plain"):
        if tensors not in ("plain", "torch"):
            raise ValueError("tensors: expected 'plain' or 'torch', got %r" % (tensors,))
        self.kernels = kernels
        self.tensors = _TorchTensors() if tensors == "torch" else _PlainTensors()
        self.options = {}

    def handle(self, msg):
        kind = msg.get("type")
        if kind == "hello":
            return self.hello(msg)
        if kind == "kernel":
            return self.kernel(msg)
        raise ValueError("a request of type %r, which this kernel adapter does not know" % (kind,))

    def hello(self, msg):
        if msg.get("kind") != "kernel":
            raise ValueError("this adapter computes kernels (serve_kernels); sdpacheck asked for a %r adapter"
                             % (msg.get("kind"),))
        self.options = dict(msg.get("options", {}))
        reply = {"type": "hello", "version": protocol.PROTOCOL_VERSION, "name": self.kernels.name}
        reply.update(self.kernels.declaration())
        return reply

    def kernel(self, msg):
        rid, op = msg["id"], msg["op"]
        fn = self.kernels.kernels.get(op)
        try:
            if fn is None:
                raise KernelUnsupported("this kernel adapter has no kernel for %s" % op)
            call = KernelCall(msg["node"], op, [_value_from_json(a, self.tensors) for a in msg["args"]],
                              {k: _value_from_json(a, self.tensors) for k, a in msg["kwargs"]},
                              [Output(self.tensors.dtype(o["dtype"]), o["shape"]) for o in msg["outputs"]],
                              msg["data_seed"])
            out = fn(call)
            outputs = list(out) if isinstance(out, (list, tuple)) else [out]
            return {"type": "result", "id": rid, "outputs": [self.tensors.to_json(t) for t in outputs]}
        except KernelRefusal as e:
            return {"type": "error", "id": rid, "error": e.kind, "message": str(e)}
        except Exception as e:  # the kernel raised: its message goes back, the adapter goes on
            if os.environ.get("SDPACHECK_ADAPTER_DEBUG"):
                traceback.print_exc(file=sys.stderr)
            return {"type": "error", "id": rid, "error": "raised", "message": "%s: %s" % (type(e).__name__, e)}


def serve_kernels(kernels, tensors="plain"):
    """Answers sdpacheck until stdin ends. tensors="torch" hands each kernel
    torch tensors (and takes them back); "plain" hands it Tensor objects."""
    import json

    requests, out = protocol.protocol_streams()
    server = KernelServer(kernels, tensors)
    for line in requests:
        protocol.write_reply(out, server.handle(json.loads(line)))
