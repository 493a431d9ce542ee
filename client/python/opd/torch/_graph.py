"""How a traced graph runs in the daemon: the one place opd.torch.compile reaches the
daemon's graph API (issue 13: define a graph once, run it in one request per call, release
it).

[Note: compile's two forms]
``define_graph(client, gm)`` asks the C client for the graph API: ``Client._define_graph``,
the extension's binding of the C library's graph definition, which the graph engineer's
branch adds with the protocol's graph messages (the Python client invents none). Until the
client has it, ``define_graph`` returns None and compile runs the traced graph op by op
(``OpByOpGraph``): every node an ATen call through opd.torch.remote's dispatch, pipelined,
correct, one request per operator. When the API lands, ``DaemonGraph`` takes the graph in
one request per call and nothing else in compile changes.
"""


class OpByOpGraph:
    """The traced graph run node by node through OpdTensor dispatch."""

    one_request = False

    def __init__(self, gm):
        self.gm = gm

    def run(self, inputs):
        return self.gm(*inputs)

    def release(self):
        self.gm = None


def define_graph(client, gm):
    """The daemon's graph of gm (run in one request per call), or None while the C client has
    no graph API."""
    define = getattr(client, "_define_graph", None)
    if define is None:
        return None
    return DaemonGraph(client, define(gm.graph))  # pragma: no cover (issue 13)


class DaemonGraph:  # pragma: no cover (issue 13)
    """A graph held by the daemon: run(inputs) is one request."""

    one_request = True

    def __init__(self, client, graph_id):
        self.client = client
        self.graph_id = graph_id

    def run(self, inputs):
        return self.client._run_graph(self.graph_id, inputs)

    def release(self):
        self.client._release_graph(self.graph_id)
