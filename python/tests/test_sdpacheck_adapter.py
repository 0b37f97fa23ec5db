"""The adapter library on its own: sizes as sdpacheck prints and decides
them, the graph through torch.fx and back (every argument kind, several
outputs, constants with qparams, names fx would change), the replies a
pass's errors give, and the plain-graph mode without torch."""

import json
import math
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import sdpacheck_adapter as sa  # noqa: E402

try:
    import torch.fx  # noqa: F401

    HAVE_FX = True
except ImportError:
    HAVE_FX = False


def graph_json():
    def ph(name, dtype, shape):
        return {"name": name, "op": "placeholder", "args": [{"str": name}], "outputs": [{"dtype": dtype, "shape": shape}]}

    q8 = {"scale": 0.02, "zero_point": -3, "qmin": -128, "qmax": 127}
    return {
        "nodes": [
            ph("q", "f32", [1, 2, "s0", 8]),
            ph("input", "bf16", [1, 2, "s0 + 1", 8]),  # a Python builtin: fx renames it
            {"name": "_tensor_constant0", "op": "get_attr", "args": [{"str": "_tensor_constant0"}],
             "outputs": [{"dtype": "int8", "shape": [3], "qparams": q8}]},
            {"name": "native_dropout", "op": "aten.native_dropout.default", "args": [{"ref": "q"}, 0.25, True],
             "outputs": [{"dtype": "f32", "shape": [1, 2, "s0", 8]}, {"dtype": "bool", "shape": [1, 2, "s0", 8]}]},
            {"name": "sum", "op": "aten.op.default",
             "args": [{"ref": "native_dropout", "output": 1}, None, -7, -0.0, {"float": "nan"}, {"float": "-inf"},
                      {"str": "q"}, {"sym": "2*s0"}, {"shape": [0, "s0"]}, {"dtype": "f16"}, {"ref": "input"},
                      {"ref": "native_dropout"}, {"ref": "_tensor_constant0"}],
             "kwargs": [["scale", 1e-300], ["enable_gqa", False]], "outputs": [{"dtype": "f32", "shape": [2]}]},
        ],
        "outputs": [{"ref": "sum"}, {"ref": "native_dropout"}],
        "constants": {"_tensor_constant0": {"dtype": "int8", "shape": [3], "data": [1.0, -2.0, 3.0], "qparams": q8}},
    }


def canonical(j):
    return json.dumps(j, sort_keys=True)


class Sizes(unittest.TestCase):
    def test_print_like_sdpacheck(self):
        # std::map order of monomials, printed from the largest: symbols first, the constant last.
        self.assertEqual(str(sa.SymExpr.parse("3 - s0*2 + s1")), "s1 - 2*s0 + 3")
        self.assertEqual(str(sa.SymExpr.parse("(s0 + 1) * (s0 - 1)")), "s0*s0 - 1")
        self.assertEqual(str(sa.SymExpr.parse("-s0")), "-s0")
        self.assertEqual(str(sa.SymExpr(0)), "0")
        self.assertEqual(sa.SymExpr.parse("s0 + 1") - 1, sa.SymExpr.symbol("s0"))
        self.assertEqual(sa.SymExpr(4), 4)
        self.assertEqual(hash(sa.SymExpr(4)), hash(4))
        with self.assertRaisesRegex(ValueError, "size expression 's0 \\+': expected a size"):
            sa.SymExpr.parse("s0 +")

    def test_statically_known_and_hints(self):
        env = sa.ShapeEnv({"s0": sa.symbolic.SymbolInfo(4, 1, 8), "u0": sa.symbolic.SymbolInfo(None, 2, 9)})
        s0, u0 = sa.SymExpr.symbol("s0"), sa.SymExpr.symbol("u0")
        self.assertTrue(env.statically_known(sa.Fact(s0, ">=", 1)))
        self.assertFalse(env.statically_known(sa.Fact(s0, "<=", u0)))
        self.assertTrue(env.statically_known(sa.Fact(s0 + 9, ">", u0)))
        self.assertEqual(env.range(s0 * 2 - u0), (-7, 14))
        self.assertIsNone(env.on_hint(sa.Fact(s0, "==", u0)))
        guard = sa.GuardContext(env, "%x")
        self.assertTrue(guard.on_hint(sa.Fact(s0, "==", 4), "r"))
        self.assertFalse(guard.on_hint(sa.Fact(u0, "==", 4), "r"))
        self.assertTrue(guard.on_hint(sa.Fact(s0, ">=", 1), "r"))  # known: no assumption
        self.assertEqual([str(a.fact) for a in guard.assumptions], ["s0 == 4"])
        guard.rule("a", True)
        guard.rule("b", False, "why")
        guard.rule("c", False)
        d = guard.finish()
        self.assertEqual((d.rewrite, d.deciding_rule), (False, "b"))
        self.assertEqual(d.to_json()["assumptions"], [{"lhs": "s0", "rel": "==", "rhs": 4, "rule": "r"}])


class PlainGraph(unittest.TestCase):
    def test_round_trip(self):
        j = graph_json()
        self.assertEqual(canonical(sa.graph_to_json(sa.graph_from_json(j))), canonical(j))

    def test_a_bad_reference_names_the_field(self):
        j = graph_json()
        j["nodes"][4]["args"][0] = {"ref": "later"}
        with self.assertRaisesRegex(sa.GraphFormatError, r"graph.nodes\[4\].args\[0\]: no node named 'later'"):
            sa.graph_from_json(j)

    def test_without_torch(self):
        # The plain-graph mode imports no torch: run where torch cannot be imported.
        code = ("import sys; sys.modules['torch'] = None; sys.path.insert(0, %r); import sdpacheck_adapter as sa;"
                "import json; s = sa.Server(lambda g, ctx: None, fx=False);"
                "print(json.dumps(s.handle({'type': 'run', 'id': 1, 'graph': %r, 'shape_env': {}})))"
                % (os.path.join(HERE, ".."), graph_json()))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        reply = json.loads(out)
        self.assertEqual(reply["type"], "result")
        self.assertEqual(canonical(reply["graph"]), canonical(graph_json()))


@unittest.skipUnless(HAVE_FX, "torch.fx is not importable (Debian: python3-torch)")
class Fx(unittest.TestCase):
    def test_round_trip(self):
        gm = sa.to_fx(sa.graph_from_json(graph_json()))
        names = [n.name for n in gm.graph.nodes]
        self.assertIn("input_1", names)  # fx's name, and sdpacheck's is kept
        node = next(n for n in gm.graph.nodes if n.name == "input_1")
        self.assertEqual(sa.graph_name(node), "input")
        self.assertEqual(canonical(sa.graph_to_json(sa.from_fx(gm))), canonical(graph_json()))

    def test_meta_and_getitem(self):
        import operator

        import torch

        gm = sa.to_fx(sa.graph_from_json(graph_json()))
        q = next(n for n in gm.graph.nodes if n.name == "q")
        self.assertEqual(q.meta["val"].dtype, torch.float32)
        self.assertEqual(q.meta["val"].shape[2], sa.SymExpr.symbol("s0"))
        gets = [n for n in gm.graph.nodes if n.target is operator.getitem]
        self.assertEqual(sorted(n.args[1] for n in gets), [0, 1])

    def test_a_pass_that_adds_a_node(self):
        from sdpacheck_adapter.ops import aten

        def add_neg(gm, ctx):
            out = next(n for n in gm.graph.nodes if n.op == "output")
            src = out.args[0][0]
            with gm.graph.inserting_before(out):
                neg = sa.make_node(gm.graph, aten.neg.default, (src,), meta=src.meta["val"])
            out.args = ((neg, out.args[0][1]),)

        s = sa.Server(add_neg)
        reply = s.handle({"type": "run", "id": 3, "graph": graph_json(), "shape_env": {}})
        self.assertEqual(reply["type"], "result", reply)
        self.assertEqual(reply["graph"]["nodes"][-1]["name"], "neg")
        self.assertEqual(reply["graph"]["outputs"][0], {"ref": "neg"})

    def test_errors_of_the_pass_are_replies(self):
        def no_meta(gm, ctx):
            from sdpacheck_adapter.ops import aten

            q = next(n for n in gm.graph.nodes if n.name == "q")
            with gm.graph.inserting_after(q):
                gm.graph.create_node("call_function", aten.neg.default, (q,), name="neg")

        cases = [(no_meta, "raised", "GraphFormatError: node %neg (aten.neg.default) has no meta['val']"),
                 (lambda gm, ctx: (_ for _ in ()).throw(IndexError("out of range")), "raised", "IndexError: out of range"),
                 (lambda gm, ctx: (_ for _ in ()).throw(sa.PassFailure("as upstream words it")), "raised",
                  "as upstream words it"),
                 (lambda gm, ctx: (_ for _ in ()).throw(sa.Unsupported("rank 2")), "unsupported", "rank 2")]
        for fn, kind, message in cases:
            reply = sa.Server(fn).handle({"type": "run", "id": 4, "graph": graph_json(), "shape_env": {}})
            self.assertEqual((reply["type"], reply["error"]), ("error", kind))
            self.assertTrue(reply["message"].startswith(message), reply["message"])

    def test_stand_in_ops(self):
        from sdpacheck_adapter.ops import aten, llama, op_name

        self.assertEqual(op_name(aten.transpose.int), "aten.transpose.int")
        self.assertEqual(op_name(llama.custom_sdpa.default), "llama.custom_sdpa.default")
        self.assertIs(aten.scaled_dot_product_attention.default, aten.scaled_dot_product_attention.default)
        with self.assertRaises(RuntimeError):
            llama.custom_sdpa.default(1)


class Protocol(unittest.TestCase):
    def test_serve_over_pipes(self):
        """hello, then a run, through a real process: stdout carries the protocol alone."""
        code = ("import sys; sys.path.insert(0, %r); import sdpacheck_adapter as sa\n"
                "def p(g, ctx):\n    print('the pass prints')\n    return g\n"
                "sa.serve(p, fx=False, name='t')" % os.path.join(HERE, ".."))
        lines = [json.dumps({"type": "hello", "version": 1, "options": {"guard": "x"}}),
                 json.dumps({"type": "run", "id": 1, "graph": graph_json(), "shape_env": {}})]
        r = subprocess.run([sys.executable, "-c", code], input="\n".join(lines) + "\n", capture_output=True, text=True,
                           check=True)
        out = [json.loads(line) for line in r.stdout.splitlines()]
        self.assertEqual(out[0], {"type": "hello", "version": sa.PROTOCOL_VERSION, "name": "t"})
        self.assertEqual((out[1]["type"], out[1]["id"]), ("result", 1))
        self.assertIn("the pass prints", r.stderr)
        self.assertTrue(math.isnan(sa.graph_from_json(out[1]["graph"]).nodes[4].args[4]))


if __name__ == "__main__":
    unittest.main()
