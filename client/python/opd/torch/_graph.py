"""How a traced graph runs in the daemon: the one place opd.torch.compile reaches the
daemon's graph API (define a graph once, run it in one request per call, release
it).

[Note: compile's two forms]
``define_graph(client, gm)`` defines the traced graph in the daemon through
``Client._define_graph`` (opd/torch/_fx_graph.py, over the C library's graph API, with the
protocol's graph messages): the daemon validates it, optimises it (no-ops, CSE, the softmax
pattern, fused pointwise groups) and compiles it once, and ``DaemonGraph.run`` is one
request per call. A graph the graph API cannot express (an operator the client has no schema
for, a constant the daemon does not hold: ``_define_graph`` raises NotImplementedError) runs
op by op instead (``OpByOpGraph``): every node an ATen call through opd.torch.remote's
dispatch, pipelined, correct, one request per operator; said once per compiled callable
with an OpdFallbackWarning naming why, and kept in its ``fallback_reason``. Errors the
daemon reports for a graph it can express are raised: they are the graph's.
"""


class OpByOpGraph:
    """The traced graph run node by node through OpdTensor dispatch."""

    one_request = False

    def __init__(self, gm, fallback_reason):
        self.gm = gm
        self.fallback_reason = fallback_reason

    def run(self, inputs):
        return self.gm(*inputs)

    def release(self):
        self.gm = None


def define_graph(client, gm, packing=None):
    """The daemon's graph of gm (run in one request per call), or an OpByOpGraph whose
    ``fallback_reason`` says why the graph API cannot express it. packing: inputs that are
    views of packed tensors ([Note: Packed parameters] in _compile.py)."""
    try:
        if packing:
            from . import _fx_graph
            return DaemonGraph(client, _fx_graph.define(client, gm.graph, packing))
        return DaemonGraph(client, client._define_graph(gm.graph))
    except NotImplementedError as e:
        return OpByOpGraph(gm, str(e))


class DaemonGraph:
    """A graph held by the daemon: run(inputs) is one request."""

    one_request = True
    fallback_reason = None

    def __init__(self, client, graph):
        self.client = client
        self.graph = graph

    def run(self, inputs):
        return self.client._run_graph(self.graph, inputs)

    def release(self):
        self.client._release_graph(self.graph)
