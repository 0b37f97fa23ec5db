"""sdpacheck's counter-based data streams (harness/case/tensor_data.cpp), so a
kernel written in Python draws the dropout keep mask sdpacheck's own kernels
draw for the same run: value i of stream NAME under seed S depends on (S,
NAME, i) alone.

    stream = CounterStream(call.data_seed, "dropout")
    kept = stream.uniform01(i) >= p           # dropout_keep(stream, i, p)
"""

_MASK = (1 << 64) - 1


def splitmix64_mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def fnv1a64(name):
    h = 0xCBF29CE484222325
    for byte in name.encode("utf-8"):
        h = ((h ^ byte) * 0x100000001B3) & _MASK
    return h


class CounterStream:
    __slots__ = ("key",)

    def __init__(self, seed, name):
        self.key = splitmix64_mix((seed & _MASK) ^ fnv1a64(name))

    def bits(self, index):
        return splitmix64_mix((self.key + (index + 1) * 0x9E3779B97F4A7C15) & _MASK)

    def uniform01(self, index):
        """A double in [0, 1): the top 53 bits of bits(index)."""
        return (self.bits(index) >> 11) * 2.0 ** -53


def dropout_keep(stream, index, p):
    """Whether element `index` is kept by dropout of probability p."""
    return stream.uniform01(index) >= p


def dropout_keep_mask(seed, numel, p):
    """The keep mask (a list of bools) of `numel` elements, in row-major order."""
    s = CounterStream(seed, "dropout")
    return [s.uniform01(i) >= p for i in range(numel)]
