"""A traced torch.fx graph (make_fx: ATen operators) as a daemon graph (proto/opd.proto,
"Graphs"; the C library's [Note: Graphs in the client]): what Client._define_graph,
_run_graph and _release_graph do ([Note: compile's two forms] in _graph.py).

[Note: fx graphs as daemon graphs]
The graph's inputs are its placeholders, in order (compile passes the module's parameters
first, then the call's arguments), then its get_attr constants (tensors the trace captured,
which compile uploaded: a graph holds no handle, so each becomes an input passed with every
run; one compile did not upload, a parameter of the trace, is uploaded here once). Each
call_function of an ATen overload is a node: its arguments in schema order up to
the last one given (the daemon fills in the defaults after it), earlier values as
GraphValues (a getitem of a node that returns several tensors or a Tensor[] is that result
of the node), a Python number at a Tensor argument sent as a Scalar (the daemon wraps it as
PyTorch wraps a number), dtypes, devices, layouts and memory formats as the typed calls send
them. The outputs are the output node's tensors, in order, and a run gives them back in the
output node's structure (a tensor, or a tuple or list of them; built without a reference
cycle, so each output is released in the daemon as soon as it dies). Anything else (an operator
the client has no schema for, a tensor constant inside an argument, a non-ATen call) raises
NotImplementedError, and compile runs that graph op by op instead. Shapes, dtypes and
strides of the outputs come from the trace's tensor_meta; the daemon checks every node again
and names the one that is wrong.
"""
import operator

import torch

from .. import _C
from ._tensor import _LAYOUTS, _MEMORY_FORMATS, OpdTensor, remote

_OPS = {}


class DefinedGraph:
    """A graph the daemon holds for this connection: its id, what the daemon made of it
    (``info``: nodes before and after the passes, kernels, softmax patterns, cache hit), the
    Op that runs it, the constants passed after the inputs, and how to shape the outputs."""

    def __init__(self, graph_id, info, ninputs, constants, template, metas):
        self.id = graph_id
        self.info = info
        self.constants = constants
        self.template = template
        self.metas = metas
        self.run_op = _C.Op(f"graph {graph_id}", "T" * (ninputs + len(constants)),
                            tuple(f"input{i}" for i in range(ninputs + len(constants))),
                            len(metas), 1, graph=graph_id)

    def __repr__(self):
        return f"<opd graph {self.id}: {self.info}>"


def _meta_of(node):
    tm = node.meta.get("tensor_meta")
    if tm is None:
        raise NotImplementedError(f"{node.format_node()}: no tensor metadata in the trace")
    return tm


def _node_op(schema, kinds):
    key = (schema.qualname, kinds)
    op = _OPS.get(key)
    if op is None:
        names = tuple(a.name for a in schema.arguments[:len(kinds.replace("?", ""))])
        op = _OPS[key] = _C.Op(schema.qualname, kinds, names, schema.nouts, schema.ret_form)
    return op


def _value(v, where):
    """An argument's value as the extension takes it (GraphValues already substituted)."""
    if isinstance(v, torch.memory_format):
        return _MEMORY_FORMATS[v]
    if isinstance(v, torch.layout):
        return _LAYOUTS[v]
    if isinstance(v, torch.Tensor):
        raise NotImplementedError(f"{where}: a tensor constant in an argument")
    return v


def define(client, graph):
    """Sends the fx graph to the daemon: a DefinedGraph ([Note: fx graphs as daemon graphs])."""
    module = graph.owning_module
    values = {}  # fx node -> GraphValue
    inputs, constants, nodes = [], [], []
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    attrs = [n for n in graph.nodes if n.op == "get_attr"]
    for n in placeholders:
        tm = _meta_of(n)
        values[n] = _C.GraphValue(len(inputs))
        inputs.append((tm.dtype, tuple(tm.shape), False))
    for n in attrs:
        t = getattr(module, n.target, None)
        if isinstance(t, torch.Tensor) and not isinstance(t, OpdTensor):
            t = remote(t.detach(), client)  # a constant of the trace, uploaded once
        if not isinstance(t, OpdTensor):
            raise NotImplementedError(f"{n.format_node()}: not a tensor")
        values[n] = _C.GraphValue(len(inputs) + len(constants))
        constants.append(t)
    inputs += [(t.dtype, tuple(t.shape), True) for t in constants]
    position = len(inputs)

    def ref(v, where):
        if isinstance(v, torch.fx.Node):
            if v not in values:
                raise NotImplementedError(f"{where}: uses {v.name}, which has no value")
            return values[v]
        if isinstance(v, (list, tuple)) and any(isinstance(x, torch.fx.Node) for x in v):
            return [ref(x, where) for x in v]
        return _value(v, where)

    output = None
    for n in graph.nodes:
        if n.op in ("placeholder", "get_attr"):
            continue
        if n.op == "output":
            output = n
            break
        if n.op != "call_function":
            raise NotImplementedError(f"{n.format_node()}: not an ATen call")
        if n.target is operator.getitem:
            src, index = n.args
            if src not in values or not isinstance(index, int):
                raise NotImplementedError(f"{n.format_node()}: not a result of a node")
            values[n] = _C.GraphValue(values[src].position, index)
            continue
        if not isinstance(n.target, torch._ops.OpOverload):
            raise NotImplementedError(f"{n.format_node()}: not an ATen call")
        s = n.target._schema
        qualname = s.name + ("." + s.overload_name if s.overload_name else "")
        schema = client.schema(qualname)
        if schema is None:
            raise NotImplementedError(f"{qualname}: the client has no schema for it")
        where = f"{n.name} ({qualname})"
        args, kwargs = n.args, n.kwargs
        last = len(args) - 1
        if kwargs:
            last = max([last] + [i for i, a in enumerate(schema.arguments) if a.name in kwargs])
        kinds, vals = "", []
        for i in range(last + 1):
            a = schema.arguments[i]
            v = args[i] if i < len(args) else kwargs.get(a.name, a.default if a.has_default
                                                          else None)
            kind = a.kind
            if kind == "T" and isinstance(v, (bool, int, float)):
                kind = "s"  # a wrapped number
            kinds += kind + ("?" if a.optional else "")
            vals.append(ref(v, where))
        nodes.append((_node_op(schema, kinds), tuple(vals)))
        values[n] = _C.GraphValue(position)
        position += 1
    if output is None:
        raise NotImplementedError("a graph without an output")

    outs, metas = [], []

    def template(v):
        if isinstance(v, torch.fx.Node):
            tm = _meta_of(v)
            outs.append(ref(v, "output"))
            metas.append(torch.empty_strided(tuple(tm.shape), tuple(tm.stride), dtype=tm.dtype,
                                             device="meta"))
            return len(outs) - 1
        if isinstance(v, (list, tuple)):
            return type(v)(template(x) for x in v)
        raise NotImplementedError(f"an output that is not a tensor: {v!r}")

    shape = template(output.args[0])
    graph_id, info = client._graph_define(inputs, nodes, outs)
    return DefinedGraph(graph_id, info, len(placeholders), constants, shape, metas)


def run(client, g, inputs):
    """One request: the graph on these OpdTensors; its outputs as OpdTensors, shaped as the
    traced function returned them."""
    device = next((t.device for t in inputs if isinstance(t, OpdTensor)), torch.device("cpu"))
    refs = [t._opd if isinstance(t, OpdTensor) else t for t in inputs]
    refs += [t._opd for t in g.constants]
    outs = client._submit(g.run_op, tuple(refs), len(g.metas)).outputs
    tensors = [OpdTensor(r, m, client, device) for r, m in zip(outs, g.metas)]
    return _shaped(g.template, tensors)


def _shaped(template, tensors):
    """The outputs in the traced function's structure (a module-level function: a nested
    recursive one would be a reference cycle holding every output until the cyclic garbage
    collector ran, and their memory in the daemon with them)."""
    if isinstance(template, int):
        return tensors[template]
    return type(template)(_shaped(x, tensors) for x in template)


def release(client, g):
    client._graph_release(g.id)
