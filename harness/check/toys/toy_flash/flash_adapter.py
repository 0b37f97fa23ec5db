#!/usr/bin/python3
"""The toy-flash pass (flash attention back to aten SDPA; guard `guarded` or
`unguarded` from the target's options) as an sdpacheck adapter on the plain
graph (the standard library only: it starts in milliseconds), with a fault
to inject for the tests of adapter supervision. The fault fires on a call
whose Lq is 5 or more on the export hints (a guard sees hints, not runtime
sizes), so a campaign shrinks it to Lq 5:

  exit            exits with status 3, after a line on stderr
  segfault        kills itself with SIGSEGV
  hang            never answers
  garbage         answers a line that is not JSON
  wrong-id        answers with another request's id
  wrong-graph     returns a graph without outputs (it does not verify)
  dangling-ref    returns a graph whose node reads a node that does not exist
  unknown-node    names, in its decision, a node that is not in the graph
  ignore-control  follows its guard where the control forces or holds a node
  raise           the pass raises (an error reply, which is not a fault)
  version         says protocol version 2 in its hello (every call fails)
"""

import argparse
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "python"))

import sdpacheck_adapter as sa  # noqa: E402
from sdpacheck_adapter import protocol  # noqa: E402

FLASH = "aten._scaled_dot_product_flash_attention.default"
SDPA = "aten.scaled_dot_product_attention.default"


class Fault:
    def __init__(self, kind):
        self.kind = kind
        self.fired = False  # on the call under way

    def at(self, *kinds):
        return self.fired and self.kind in kinds


def shape(g, ref):
    return g.nodes[g.find(ref.node)].outputs[ref.output].shape


def sdpa_of(out, flash):
    """ReplaceFusedSdpaWithSdpaPass's core: the same q, k, v, dropout, causal flag and scale."""
    kwargs = {"scale": flash.kwargs["scale"]} if "scale" in flash.kwargs else {}
    kwargs["enable_gqa"] = True
    a = flash.args
    return sa.Node(out.unique_name("sdpa"), SDPA, [a[0], a[1], a[2], None, a[3], a[4]], kwargs, [flash.outputs[0]])


def flash_pass(fault):
    def run(g, ctx):
        guarded = ctx.options.get("guard", "guarded") == "guarded"
        out = sa.Graph(constants=g.constants)
        moved = {}

        def remap(a):
            return moved.get(a, a) if isinstance(a, sa.Ref) else a

        for n in g.nodes:
            n.args = [remap(a) for a in n.args]
            n.kwargs = {k: remap(a) for k, a in n.kwargs.items()}
            if n.op != FLASH:
                out.nodes.append(n)
                continue
            guard = ctx.guard(n.name)
            lq, lkv = shape(g, n.args[0])[-2], shape(g, n.args[1])[-2]
            if guarded:
                guard.rule("causal-lengths", not n.args[4] or guard.known(sa.Fact(lq, "==", lkv)),
                           "causal: Lq %s == Lkv %s statically known" % (lq, lkv))
            fault.fired = lq_on_hints(lq, ctx.shape_env) >= 5
            inject(fault, guard)
            rewrite = ctx.decide(guard)
            if fault.at("ignore-control"):
                rewrite = ctx.decisions[-1].rewrite
            if not rewrite:
                out.nodes.append(n)
                continue
            s = sdpa_of(out, n)
            if fault.at("dangling-ref"):
                s.args[0] = sa.Ref("nowhere")
            out.nodes.append(s)
            moved[sa.Ref(n.name, 0)] = moved[sa.Ref(n.name, 1)] = sa.Ref(s.name)
        out.outputs = [] if fault.at("wrong-graph") else [remap(o) for o in g.outputs]
        return out

    return run


def lq_on_hints(lq, env):
    """Lq on the export hints; 0 when a symbol of it is unbacked."""
    hints = {s: env.symbols[s].hint for s in lq.symbols()}
    return 0 if None in hints.values() else lq.eval(hints)


def inject(fault, guard):
    if fault.at("exit"):
        sys.stderr.write("flash_adapter: exiting on a call with Lq >= 5\n")
        sys.stderr.flush()
        os._exit(3)
    if fault.at("segfault"):
        os.kill(os.getpid(), signal.SIGSEGV)
    if fault.at("hang"):
        while True:
            time.sleep(1)
    if fault.at("unknown-node"):
        guard.node = "%nowhere"
    if fault.at("raise"):
        raise ValueError("the flash pass refuses Lq >= 5")


def main():
    p = argparse.ArgumentParser(description="the toy-flash pass as an sdpacheck adapter, with a fault")
    p.add_argument("--fault", default="none")
    p.add_argument("--starts", help="a file to append a line to at each start")
    args = p.parse_args()
    if args.starts:
        with open(args.starts, "a") as f:
            f.write("%d\n" % os.getpid())
    fault = Fault(args.fault)
    server = sa.Server(flash_pass(fault), fx=False, name="flash_adapter.py")
    requests, out = protocol.protocol_streams()
    for line in requests:
        fault.fired = False
        reply = server.handle(json.loads(line))
        if reply["type"] == "hello" and fault.kind == "version":
            reply["version"] = 2
        if fault.at("garbage"):
            out.write("this is not json {\n")
            out.flush()
            continue
        if fault.at("wrong-id"):
            reply["id"] += 1000
        protocol.write_reply(out, reply)


if __name__ == "__main__":
    main()
