"""sdpacheck's dtype names and torch's dtypes (when torch is installed)."""

try:
    import torch
except ImportError:  # the plain-graph mode needs no torch
    torch = None

_TORCH = {}
if torch is not None:
    _TORCH = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
              "int8": torch.int8, "int32": torch.int32, "int64": torch.int64, "bool": torch.bool}
_NAMES = {t: n for n, t in _TORCH.items()}


def torch_dtype(name):
    """The torch.dtype of sdpacheck's dtype name ("f32" -> torch.float32)."""
    return _TORCH[name]


def is_torch_dtype(d):
    return torch is not None and isinstance(d, torch.dtype)


def name_of_torch(d):
    if d in _NAMES:
        return _NAMES[d]
    raise ValueError("a dtype sdpacheck's graph cannot hold: %r" % (d,))
