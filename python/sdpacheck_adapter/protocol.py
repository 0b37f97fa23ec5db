"""The adapter's side of the protocol (docs/adapters.md, version 1): one JSON
object a line on stdin, one reply a line on stdout.

    sdpacheck: {"type": "hello", "version": 1, "kind": "pass", "pass", "target", "options"}
    adapter:   {"type": "hello", "version": 1, "name": ...}
    sdpacheck: {"type": "run", "id", "graph", "shape_env", "control": {"force_all", "forced", "held"}}
    adapter:   {"type": "result", "id", "graph", "decisions": [...]}
           or  {"type": "error", "id", "error": "raised" | "unsupported", "message"}

serve() answers until stdin ends. What the pass prints goes to stderr: stdout
carries the protocol alone. Kernel adapters (hello kind "kernel", `kernel`
requests) are served by kernels.serve_kernels.
"""

import json
import os
import sys
import traceback

from .graph_json import graph_from_json, graph_to_json, shape_env_from_json
from .guard import GuardContext, RewriteControl

PROTOCOL_VERSION = 1


class PassFailure(Exception):
    """The pass fails as its upstream raises; sdpacheck reports the message as
    it is (other exceptions as "TypeName: message")."""


class Unsupported(Exception):
    """The pass refuses a form it does not take (sdpacheck: unsupported)."""


class PassContext:
    """What one run of the pass gets besides its graph: the shape environment,
    the rewrite control, the target's options (from the hello), and the
    decisions it makes."""

    def __init__(self, shape_env, control, options):
        self.shape_env, self.control, self.options = shape_env, control, options
        self.decisions = []

    def guard(self, node_name):
        """A GuardContext for the node sdpacheck knows as `node_name` (without %)."""
        return GuardContext(self.shape_env, "%" + node_name)

    def decide(self, guard):
        """Records the guard's decision; True when the node is to be rewritten
        (accepted and not held, or forced)."""
        d = guard.finish()
        self.decisions.append(d)
        return self.control.rewrites(d)


def _error_message(e):
    if isinstance(e, (PassFailure, Unsupported)):
        return str(e)
    return "%s: %s" % (type(e).__name__, e)


class Server:
    """Answers one request at a time: handle(msg) is the reply to a request."""

    def __init__(self, pass_fn, fx=True, name=None):
        self.pass_fn, self.fx, self.name = pass_fn, fx, name or os.path.basename(sys.argv[0])
        self.options = {}
        if fx:
            from . import fx_graph  # needs torch

            self.fx_graph = fx_graph

    def handle(self, msg):
        kind = msg.get("type")
        if kind == "hello":
            return self.hello(msg)
        if kind == "run":
            return self.run(msg)
        raise ValueError("a request of type %r, which this adapter does not know" % (kind,))

    def hello(self, msg):
        if msg.get("kind", "pass") != "pass":
            raise ValueError("this adapter is a pass (serve); sdpacheck asked for a %r adapter" % (msg.get("kind"),))
        self.options = dict(msg.get("options", {}))
        return {"type": "hello", "version": PROTOCOL_VERSION, "name": self.name}

    def run(self, msg):
        rid = msg["id"]
        c = msg.get("control", {})
        ctx = PassContext(shape_env_from_json(msg["shape_env"]),
                          RewriteControl(c.get("force_all", False), c.get("forced", []), c.get("held", [])),
                          self.options)
        try:
            g = graph_from_json(msg["graph"])
            if self.fx:
                gm = self.fx_graph.to_fx(g)
                out = self.pass_fn(gm, ctx)
                g = self.fx_graph.from_fx(out if out is not None else gm)
            else:
                out = self.pass_fn(g, ctx)
                g = out if out is not None else g
            graph = graph_to_json(g)
        except Exception as e:  # the pass raised: its message goes back, the adapter goes on
            if os.environ.get("SDPACHECK_ADAPTER_DEBUG"):
                traceback.print_exc(file=sys.stderr)
            kind = "unsupported" if isinstance(e, Unsupported) else "raised"
            return {"type": "error", "id": rid, "error": kind, "message": _error_message(e)}
        return {"type": "result", "id": rid, "graph": graph, "decisions": [d.to_json() for d in ctx.decisions]}


def protocol_streams():
    """(requests, reply stream): stdin, and a copy of stdout, which then goes
    to stderr so that what the pass prints cannot break the protocol."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return sys.stdin.buffer, out


def write_reply(out, reply):
    out.write(json.dumps(reply, allow_nan=False, separators=(",", ":")) + "\n")
    out.flush()


def serve(pass_fn, fx=True, name=None):
    """Answers sdpacheck until stdin ends. `pass_fn(graph, ctx)` gets a
    torch.fx GraphModule (fx=True) or a graph_json.Graph, changes it in place
    or returns the new one, and records one decision a node it matched
    (ctx.guard, ctx.decide)."""
    requests, out = protocol_streams()
    server = Server(pass_fn, fx, name)
    for line in requests:
        write_reply(out, server.handle(json.loads(line)))
