"""The kernel side of the adapter library on its own: the hello's declaration,
a request's arguments as a kernel gets them (every kind, plain and torch),
outputs written exactly, refusals and raised errors as replies, a hello of
the other kind refused, and serve_kernels over pipes."""

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
    import torch

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

F32_TENTH = 0.10000000149011612  # 0.1 rounded to f32


def request(op="aten.neg.default", args=None, kwargs=None, outputs=None, rid=3):
    x = {"dtype": "f32", "shape": [2, 2], "data": [-0.0, "inf", "nan", F32_TENTH]}
    return {"type": "kernel", "id": rid, "node": "neg", "op": op,
            "args": args if args is not None else [{"tensor": x}],
            "kwargs": kwargs or [],
            "outputs": outputs or [{"dtype": "f32", "shape": [2, 2]}], "data_seed": 2 ** 64 - 1}


def kernels():
    k = sa.Kernels("t.py", dtypes=["f32", "f64"],
                   numerics={"f32": sa.Numerics("f32", "f32", split_scale=True), "f64": sa.Numerics("f64", "f64")})
    k.add("aten.neg.default", lambda c: sa.Tensor("f32", c.out_shape(), [-x for x in c.tensor(0).data]))
    return k


class Declaration(unittest.TestCase):
    def test_hello(self):
        s = sa.KernelServer(kernels())
        reply = s.handle({"type": "hello", "version": 1, "kind": "kernel", "options": {"mutant": "none"}})
        self.assertEqual(reply, {"type": "hello", "version": 1, "name": "t.py", "ops": ["aten.neg.default"],
                                 "dtypes": ["f32", "f64"],
                                 "numerics": {"f32": {"storage": "f32", "accumulation": "f32", "split_scale": True},
                                              "f64": {"storage": "f64", "accumulation": "f64", "split_scale": False}}})
        self.assertEqual(s.options, {"mutant": "none"})

    def test_a_hello_of_the_other_kind_is_refused(self):
        with self.assertRaisesRegex(ValueError, "this adapter computes kernels"):
            sa.KernelServer(kernels()).handle({"type": "hello", "version": 1, "kind": "pass"})
        with self.assertRaisesRegex(ValueError, "this adapter is a pass"):
            sa.Server(lambda g, ctx: g, fx=False).handle({"type": "hello", "version": 1, "kind": "kernel"})

    def test_numerics_take_dtype_names(self):
        with self.assertRaisesRegex(ValueError, "'float' is not one of"):
            sa.Numerics("f32", "float")


class PlainKernels(unittest.TestCase):
    def test_every_argument_kind(self):
        seen = {}
        k = sa.Kernels()

        @k.op("aten.some.default")
        def some(call):
            seen["call"] = call
            return sa.Tensor("f32", [2, 2], [1.0, -math.inf, math.nan, -0.0])

        args = [{"tensor": {"dtype": "bool", "shape": [1], "data": [1.0]}}, None, True, -7, 0.5, {"float": "-inf"},
                {"str": "mean"}, {"shape": [2, 3]}, {"dtype": "bf16"}]
        reply = sa.KernelServer(k).handle(request("aten.some.default", args, [["scale", 0.125], ["dtype", {"dtype": "f32"}]]))
        c = seen["call"]
        self.assertEqual((c.node, c.op, c.data_seed), ("neg", "aten.some.default", 2 ** 64 - 1))
        self.assertEqual(c.tensor(0).data, [1.0])
        self.assertEqual(c.args[1:7], [None, True, -7, 0.5, -math.inf, "mean"])
        self.assertEqual(c.args[7], (2, 3))
        self.assertEqual(c.args[8], "bf16")
        self.assertFalse(c.has(1))
        self.assertEqual(list(c.kwargs), ["scale", "dtype"])
        self.assertEqual((c.kwarg("scale"), c.kwarg("dtype"), c.kwarg("absent", 9)), (0.125, "f32", 9))
        self.assertEqual((c.out_dtype(), c.out_shape()), ("f32", (2, 2)))
        self.assertEqual(reply, {"type": "result", "id": 3,
                                 "outputs": [{"dtype": "f32", "shape": [2, 2], "data": [1.0, "-inf", "nan", -0.0]}]})
        self.assertTrue(math.copysign(1, json.loads(json.dumps(reply))["outputs"][0]["data"][3]) < 0)

    def test_refusals_and_raised_errors_are_replies(self):
        k = sa.Kernels()
        for op, exc in [("r", sa.Recoverable("checked")), ("u", sa.KernelUnsupported("gap")), ("f", sa.Fatal("abort")),
                        ("x", ZeroDivisionError("division by zero"))]:
            def fail(call, exc=exc):
                raise exc
            k.add(op, fail)
        s = sa.KernelServer(k)
        answers = [(r["error"], r["message"]) for r in (s.handle(request(op)) for op in ("r", "u", "f", "x", "none"))]
        self.assertEqual(answers, [("recoverable", "checked"), ("unsupported", "gap"), ("fatal", "abort"),
                                   ("raised", "ZeroDivisionError: division by zero"),
                                   ("unsupported", "this kernel adapter has no kernel for none")])

    def test_dropout_mask_is_the_dropout_stream(self):
        s = sa.CounterStream(11, "dropout")
        self.assertEqual(sa.dropout_keep_mask(11, 50, 0.3), [s.uniform01(i) >= 0.3 for i in range(50)])
        call = sa.KernelCall("n", "op", [], {}, [], 11)
        self.assertEqual(call.dropout_stream().bits(7), s.bits(7))


@unittest.skipUnless(HAVE_TORCH, "torch is not importable (Debian: python3-torch)")
class TorchKernels(unittest.TestCase):
    def test_tensors_go_both_ways_exactly(self):
        seen = {}
        k = sa.Kernels()

        @k.op("aten.neg.default")
        def neg(call):
            seen["x"] = call.tensor(0)
            return torch.neg(call.tensor(0)), torch.isnan(call.tensor(0))

        reply = sa.KernelServer(k, tensors="torch").handle(
            request(outputs=[{"dtype": "f32", "shape": [2, 2]}, {"dtype": "bool", "shape": [2, 2]}]))
        x = seen["x"]
        self.assertEqual((x.dtype, tuple(x.shape)), (torch.float32, (2, 2)))
        self.assertEqual(x[1, 1].item(), F32_TENTH)
        out, nan = reply["outputs"]
        self.assertEqual(out["dtype"], "f32")
        self.assertEqual(out["data"][0], 0.0)
        self.assertEqual(out["data"][1:3], ["-inf", "nan"])
        self.assertEqual(out["data"][3], -F32_TENTH)
        self.assertEqual(nan, {"dtype": "bool", "shape": [2, 2], "data": [0.0, 0.0, 1.0, 0.0]})

    def test_dtypes_are_torch_dtypes(self):
        k = sa.Kernels()
        k.add("aten._to_copy.default", lambda c: c.tensor(0).to(c.kwarg("dtype")))
        reply = sa.KernelServer(k, tensors="torch").handle(
            request("aten._to_copy.default", kwargs=[["dtype", {"dtype": "f64"}]],
                    args=[{"tensor": {"dtype": "f32", "shape": [1], "data": [F32_TENTH]}}]))
        self.assertEqual(reply["outputs"][0], {"dtype": "f64", "shape": [1], "data": [F32_TENTH]})


class Serving(unittest.TestCase):
    def test_serve_kernels_over_pipes(self):
        """hello, then a kernel, through a real process: stdout carries the protocol alone."""
        code = ("import sys; sys.path.insert(0, %r); import sdpacheck_adapter as sa\n"
                "k = sa.Kernels('p', dtypes=['f32'])\n"
                "def neg(call):\n    print('the kernel prints')\n"
                "    return sa.Tensor('f32', call.out_shape(), [-x for x in call.tensor(0).data])\n"
                "k.add('aten.neg.default', neg)\n"
                "sa.serve_kernels(k)" % os.path.join(HERE, ".."))
        lines = [json.dumps({"type": "hello", "version": 1, "kind": "kernel", "options": {}}), json.dumps(request())]
        r = subprocess.run([sys.executable, "-c", code], input="\n".join(lines) + "\n", capture_output=True, text=True,
                           check=True)
        out = [json.loads(line) for line in r.stdout.splitlines()]
        self.assertEqual(out[0]["ops"], ["aten.neg.default"])
        self.assertEqual(out[1]["outputs"][0]["data"][:2], [0.0, "-inf"])
        self.assertIn("the kernel prints", r.stderr)


if __name__ == "__main__":
    unittest.main()
