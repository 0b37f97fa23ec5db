"""fx call_function targets by op name. An op the installed torch has is its
OpOverload (torch.ops.aten.transpose.int); one it lacks is a NamedOp that
stands in for it by name: llama.custom_sdpa, and on torch 1.13 the aten ops
added later (aten.scaled_dot_product_attention.default, aten.squeeze.dims).
Either way `node.target == aten.scaled_dot_product_attention.default`
reads as it does against current torch, and op_name(node.target) gives
the name sdpacheck's graph uses.

    from sdpacheck_adapter.ops import aten, llama
    if node.target == aten.scaled_dot_product_attention.default: ...
"""

try:
    import torch
except ImportError:
    torch = None


class NamedOp:
    """An op by name, as an fx target: calling it raises (the graph is never
    run here; sdpacheck runs it with its own kernels)."""

    _interned = {}

    def __new__(cls, name):
        if name not in cls._interned:
            op = super().__new__(cls)
            op.qualified_name = name
            op.__name__ = name.replace(".", "_")  # what fx's code generation names it
            op.__module__ = "sdpacheck_adapter.ops"
            cls._interned[name] = op
        return cls._interned[name]

    def __call__(self, *args, **kwargs):
        raise RuntimeError("%s is not an op of the installed torch; sdpacheck runs the graph" % self.qualified_name)

    def __repr__(self):
        return self.qualified_name

    def __reduce__(self):
        return (NamedOp, (self.qualified_name,))


_resolved = {}


def op(name):
    """The target for op "ns.op.overload": torch's OpOverload if it has it, else a NamedOp."""
    if name not in _resolved:
        target = None
        parts = name.split(".")
        if torch is not None and len(parts) == 3:
            try:
                target = getattr(getattr(getattr(torch.ops, parts[0]), parts[1]), parts[2])
            except Exception:  # torch raises RuntimeError or AttributeError for an op it lacks
                target = None
        _resolved[name] = target if target is not None and str(target) == name else NamedOp(name)
    return _resolved[name]


def op_name(target):
    """sdpacheck's op name of an fx target, or None for a target that is not an op."""
    if isinstance(target, NamedOp):
        return target.qualified_name
    if torch is not None and isinstance(target, torch._ops.OpOverload):
        return str(target)
    return None


class _Packet:
    def __init__(self, prefix):
        self._prefix = prefix

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        return op(self._prefix + "." + overload)


class _Namespace:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, opname):
        if opname.startswith("__"):
            raise AttributeError(opname)
        return _Packet(self._name + "." + opname)


aten = _Namespace("aten")
llama = _Namespace("llama")
