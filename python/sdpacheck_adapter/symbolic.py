"""Symbolic sizes as sdpacheck writes them: integer polynomials over named
symbols ("s0 + 1", "2*s1"), and the shape environment a guard asks.

SymExpr follows harness/ir/symbolic.h: a canonical sum of weighted
monomials, so structurally equal sizes compare equal, printed exactly as
sdpacheck prints them. ShapeEnv follows harness/ir/shape_env.h: ranges by
interval arithmetic, facts statically known (true for every size in range)
or evaluated on the export hints.
"""

import re

MAX_EXPRESSION_LENGTH = 256
MAX_TERMS = 64
_INT32_MAX = 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class SymExpr:
    """A size: {monomial (sorted tuple of symbol names): weight}, no zero weight."""

    __slots__ = ("terms",)

    def __init__(self, value=0):
        if isinstance(value, SymExpr):
            self.terms = dict(value.terms)
        elif isinstance(value, int) and not isinstance(value, bool):
            self.terms = {(): value} if value != 0 else {}
        else:
            raise TypeError("a size is an int or a SymExpr, got %r" % (value,))

    @staticmethod
    def symbol(name):
        e = SymExpr()
        e.terms = {(name,): 1}
        return e

    @staticmethod
    def parse(text):
        return _Parser(text).parse()

    @staticmethod
    def of(value):
        """An int, a SymExpr or an expression's text, as a SymExpr."""
        if isinstance(value, SymExpr):
            return value
        if isinstance(value, str):
            return SymExpr.parse(value)
        return SymExpr(value)

    def is_constant(self):
        return not self.terms or (len(self.terms) == 1 and () in self.terms)

    def constant(self):
        if not self.is_constant():
            raise ValueError("size '%s' is not a constant" % self)
        return self.terms.get((), 0)

    def is_symbol(self):
        return len(self.terms) == 1 and all(len(m) == 1 and w == 1 for m, w in self.terms.items())

    def symbols(self):
        return {s for mono in self.terms for s in mono}

    def eval(self, values):
        total = 0
        for mono, w in self.terms.items():
            p = w
            for s in mono:
                if s not in values:
                    raise KeyError("no value for symbol '%s'" % s)
                p *= values[s]
            total += p
        return total

    def __str__(self):
        if not self.terms:
            return "0"
        out = ""
        # Symbols first, constant last, as sdpacheck prints: "s0 + 1".
        for mono in sorted(self.terms, reverse=True):
            w = self.terms[mono]
            mag = -w if w < 0 else w
            if not out:
                out += "-" if w < 0 else ""
            else:
                out += " - " if w < 0 else " + "
            m = "*".join(mono)
            if not m:
                out += str(mag)
            else:
                out += ("" if mag == 1 else "%d*" % mag) + m
        return out

    def __repr__(self):
        return "SymExpr(%r)" % str(self)

    def __int__(self):
        return self.constant()

    def __index__(self):
        return self.constant()

    def _combine(self, other, sign):
        o = SymExpr.of(other)
        r = SymExpr(self)
        for mono, w in o.terms.items():
            r.terms[mono] = r.terms.get(mono, 0) + sign * w
        r.terms = {m: w for m, w in r.terms.items() if w != 0}
        return r

    def __add__(self, other):
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other):
        return self._combine(other, -1)

    def __rsub__(self, other):
        return SymExpr.of(other)._combine(self, -1)

    def __neg__(self):
        return SymExpr(0) - self

    def __mul__(self, other):
        o = SymExpr.of(other)
        r = {}
        for a, wa in self.terms.items():
            for b, wb in o.terms.items():
                m = tuple(sorted(a + b))
                r[m] = r.get(m, 0) + wa * wb
        e = SymExpr()
        e.terms = {m: w for m, w in r.items() if w != 0}
        return e

    __rmul__ = __mul__

    def __eq__(self, other):
        if isinstance(other, bool) or not isinstance(other, (int, SymExpr)):
            return NotImplemented
        return self.terms == SymExpr.of(other).terms

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        if self.is_constant():
            return hash(self.constant())
        return hash(tuple(sorted(self.terms.items())))


class _Parser:
    """sum := product (('+'|'-') product)*, product := atom ('*' atom)*,
    atom := int | name | '(' sum ')' | '-' atom; the bounds of symbolic.cpp."""

    def __init__(self, text):
        self.text = text
        self.pos = 0

    def fail(self, why):
        raise ValueError("size expression '%s': %s" % (self.text, why))

    def parse(self):
        if len(self.text) > MAX_EXPRESSION_LENGTH:
            raise ValueError("size expression of %d characters, the limit is %d"
                             % (len(self.text), MAX_EXPRESSION_LENGTH))
        e = self.sum()
        self.skip()
        if self.pos != len(self.text):
            self.fail("unexpected '%s'" % self.text[self.pos])
        return e

    def skip(self):
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def eat(self, c):
        self.skip()
        if self.pos < len(self.text) and self.text[self.pos] == c:
            self.pos += 1
            return True
        return False

    def bounded(self, e):
        if len(e.terms) > MAX_TERMS:
            self.fail("more than %d terms when multiplied out" % MAX_TERMS)
        return e

    def sum(self):
        e = self.product()
        while True:
            if self.eat("+"):
                e = self.bounded(e + self.product())
            elif self.eat("-"):
                e = self.bounded(e - self.product())
            else:
                return e

    def product(self):
        e = self.atom()
        while self.eat("*"):
            e = self.bounded(e * self.atom())
        return e

    def atom(self):
        self.skip()
        if self.eat("("):
            e = self.sum()
            if not self.eat(")"):
                self.fail("missing ')'")
            return e
        if self.eat("-"):
            return SymExpr(-1) * self.atom()
        m = re.compile(r"\d+").match(self.text, self.pos)
        if m:
            if len(m.group()) > 15:
                self.fail("integer too large")
            self.pos = m.end()
            return SymExpr(int(m.group()))
        m = re.compile(r"[A-Za-z0-9_]+").match(self.text, self.pos)
        if not m:
            self.fail("unexpected '%s'" % self.text[self.pos] if self.pos < len(self.text) else "expected a size")
        self.pos = m.end()
        return SymExpr.symbol(m.group())


def shape_str(shape):
    """"[2, s0 + 1]", as sdpacheck prints a shape."""
    return "[" + ", ".join(str(SymExpr.of(d)) for d in shape) + "]"


RELS = ("==", "!=", "<", "<=", ">", ">=")


def _holds(a, rel, b):
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[rel]


class Fact:
    """A comparison between two sizes, such as Lq == Lkv."""

    __slots__ = ("lhs", "rel", "rhs")

    def __init__(self, lhs, rel, rhs):
        if rel not in RELS:
            raise ValueError("a relation is one of %s, got %r" % (", ".join(RELS), rel))
        self.lhs, self.rel, self.rhs = SymExpr.of(lhs), rel, SymExpr.of(rhs)

    def holds(self, values):
        return _holds(self.lhs.eval(values), self.rel, self.rhs.eval(values))

    def __str__(self):
        return "%s %s %s" % (self.lhs, self.rel, self.rhs)

    def __repr__(self):
        return "Fact(%r)" % str(self)


class SymbolInfo:
    __slots__ = ("hint", "min", "max")

    def __init__(self, hint, min, max):  # noqa: A002 (the field names of the JSON form)
        self.hint, self.min, self.max = hint, min, max


class ShapeEnv:
    """Every symbol's range and export hint (None: unbacked)."""

    def __init__(self, symbols=None):
        self.symbols = dict(symbols or {})

    def range(self, e):
        """Bounds of `e` over every size in range: sound, possibly wider than exact."""
        lo = hi = 0
        for mono, w in SymExpr.of(e).terms.items():
            tlo = thi = w
            for s in mono:
                info = self.symbols.get(s)
                smin = info.min if info else 0
                smax = info.max if info else _INT32_MAX
                c = (tlo * smin, tlo * smax, thi * smin, thi * smax)
                tlo, thi = min(c), max(c)
            lo += tlo
            hi += thi
        return lo, hi

    def statically_known(self, fact):
        """True only if the fact holds for every size the symbols allow."""
        d = fact.lhs - fact.rhs
        if d.is_constant():
            return _holds(d.constant(), fact.rel, 0)
        lo, hi = self.range(d)
        return {"==": lo == 0 and hi == 0, "!=": lo > 0 or hi < 0, "<": hi < 0, "<=": hi <= 0,
                ">": lo > 0, ">=": lo >= 0}[fact.rel]

    def on_hint(self, fact):
        """The fact on the export hints; None when an unbacked symbol takes part."""
        values = {}
        for s in fact.lhs.symbols() | fact.rhs.symbols():
            info = self.symbols.get(s)
            if info is None or info.hint is None:
                return None
            values[s] = info.hint
        return fact.holds(values)
