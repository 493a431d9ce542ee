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

[Note: In-place nodes as functional ones]
make_fx records the in-place operators a module calls (ReLU(inplace=True): relu_, batch norm's
num_batches_tracked.add_(1), an RNN's transpose_), and a daemon graph's nodes are functional.
Such a node becomes its functional form (relu_ -> relu, transpose_ -> transpose), and every
later use of the tensor it wrote (its written argument, and the results of earlier in-place
nodes on it, which are that tensor) uses the new value instead: what eager reads there. That
is exact when nothing else sees the write: the written tensor is not a view, and no view of it
is read after the write (else the node is refused, NotImplementedError, and the graph runs op
by op). A written graph input (a buffer: num_batches_tracked) also becomes an extra output of
the graph, copied into the input's OpdTensor after each run (aten::copy_, in order behind the
run), so the daemon's buffer changes as eager's does. Data-dependent operators (nonzero,
masked_select, indexing with a boolean mask: their results' shapes depend on values, which a
graph's shapes cannot) are refused the same way and run op by op ([Note: Results whose shape
depends on values] in _tensor.py).
"""
import operator

import torch

from .. import _C
from ._tensor import (_INPLACE_VIEWS, _LAYOUTS, _MEMORY_FORMATS, OpdTensor, _copy_into,
                      _functional_form, remote)

_OPS = {}


class DefinedGraph:
    """A graph the daemon holds for this connection: its id, what the daemon made of it
    (``info``: nodes before and after the passes, kernels, softmax patterns, cache hit), the
    Op that runs it, the constants passed after the inputs, and how to shape the outputs."""

    def __init__(self, graph_id, info, passed, constants, template, metas, writebacks):
        self.id = graph_id
        self.info = info
        #: the positions of the inputs a run passes (the others are views of constants)
        self.passed = passed
        ninputs = len(passed)
        self.constants = constants
        self.template = template
        self.metas = metas
        #: (input position, output position): a written input gets that output's value
        self.writebacks = writebacks
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


_aten = torch.ops.aten
# operators whose results' shapes depend on values (index.Tensor: with a boolean mask)
_DATA_DEPENDENT = {_aten.nonzero.default, _aten.masked_select.default}
_MASKS = (torch.bool, torch.uint8)


def _data_dependent(n):
    if n.target in _DATA_DEPENDENT:
        return True
    if n.target is _aten.index.Tensor and len(n.args) > 1:
        return any(isinstance(i, torch.fx.Node) and "tensor_meta" in i.meta and
                   i.meta["tensor_meta"].dtype in _MASKS for i in n.args[1])
    return False


def _qualname(op):
    s = op._schema
    return s.name + ("." + s.overload_name if s.overload_name else "")


def _written(op):
    """The positions of the arguments an ATen overload writes."""
    return [i for i, a in enumerate(op._schema.arguments)
            if a.alias_info is not None and a.alias_info.is_write]


def _is_view(op):
    return not _written(op) and any(r.alias_info is not None for r in op._schema.returns)


def _functional_plan(graph, client):
    """[Note: In-place nodes as functional ones]: {in-place node: its functional form} and, for
    each node, the tensor it is (an in-place node's result is its written argument) and the
    storage it views. NotImplementedError for a write that is not exact as a new value."""
    order = {n: i for i, n in enumerate(graph.nodes)}
    tensor_of, storage_of, plan = {}, {}, {}
    for n in graph.nodes:
        tensor_of[n] = storage_of[n] = n
        if n.op != "call_function":
            continue
        if n.target is operator.getitem:  # a result of a node that returns views (split)
            src = n.args[0]
            if isinstance(src, torch.fx.Node) and storage_of.get(src, src) is not src:
                storage_of[n] = storage_of[src]
            continue
        op = n.target
        if not isinstance(op, torch._ops.OpOverload):
            continue
        first = n.args[0] if n.args and isinstance(n.args[0], torch.fx.Node) else None
        if _is_view(op) and first is not None:
            storage_of[n] = storage_of[first]
            continue
        written = _written(op)
        if not written:
            continue
        where = f"{n.format_node()}"
        functional = _INPLACE_VIEWS.get(op) or _functional_form(op)
        if written != [0] or first is None or functional is None or \
                client.schema(_qualname(functional)) is None:
            raise NotImplementedError(f"{where}: writes an argument, and has no functional "
                                      f"form the daemon defines")
        target = tensor_of[first]
        tensor_of[n], storage_of[n] = target, storage_of[first]
        if op in _INPLACE_VIEWS:
            if target.op != "call_function":
                raise NotImplementedError(f"{where}: changes the geometry of a graph input")
        else:
            if storage_of[first] is not target:
                raise NotImplementedError(f"{where}: writes into a view")
            later = [u for v, root in storage_of.items() if root is target and
                     tensor_of[v] is not target for u in v.users if order[u] > order[n]]
            if later:
                raise NotImplementedError(f"{where}: a view of the tensor it writes is read "
                                          f"after it ({later[0].name})")
        plan[n] = functional
    return plan, tensor_of


def define(client, graph, packing=None):
    """Sends the fx graph to the daemon: a DefinedGraph ([Note: fx graphs as daemon graphs]).
    packing: {placeholder position: (packed OpdTensor, sizes, strides, offset)}, placeholders
    that are views of a packed tensor ([Note: Packed parameters] in _compile.py): the packed
    tensor is passed with every run, and the view is a node."""
    module = graph.owning_module
    packing = packing or {}
    values = {}  # fx node -> GraphValue
    inputs, constants, nodes = [], [], []
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    attrs = [n for n in graph.nodes if n.op == "get_attr"]
    passed = []  # the placeholders passed as inputs (the others are views of packed tensors)
    for i, n in enumerate(placeholders):
        if i in packing:
            continue
        tm = _meta_of(n)
        values[n] = _C.GraphValue(len(inputs))
        inputs.append((tm.dtype, tuple(tm.shape), False))
        passed.append(i)
    for n in attrs:
        t = getattr(module, n.target, None)
        if isinstance(t, torch.Tensor) and not isinstance(t, OpdTensor):
            t = remote(t.detach(), client)  # a constant of the trace, uploaded once
        if not isinstance(t, OpdTensor):
            raise NotImplementedError(f"{n.format_node()}: not a tensor")
        values[n] = _C.GraphValue(len(inputs) + len(constants))
        constants.append(t)
    packed_values = {}
    for packed, _, _, _ in packing.values():
        if id(packed) not in packed_values:
            packed_values[id(packed)] = _C.GraphValue(len(inputs) + len(constants))
            constants.append(packed)
    inputs += [(t.dtype, tuple(t.shape), True) for t in constants]
    position = len(inputs)
    if packing:
        schema = client.schema("aten::as_strided")
        op = _node_op(schema, "".join(a.kind + ("?" if a.optional else "")
                                      for a in schema.arguments[:4]))
        for i, (packed, sizes, strides, offset) in packing.items():
            nodes.append((op, (packed_values[id(packed)], list(sizes), list(strides), offset)))
            values[placeholders[i]] = _C.GraphValue(position)
            position += 1

    def ref(v, where):
        if isinstance(v, torch.fx.Node):
            if v not in values:
                raise NotImplementedError(f"{where}: uses {v.name}, which has no value")
            return values[v]
        if isinstance(v, (list, tuple)) and any(isinstance(x, torch.fx.Node) for x in v):
            return [ref(x, where) for x in v]
        return _value(v, where)

    plan, tensor_of = _functional_plan(graph, client)
    written_inputs = {}  # a graph input an in-place node wrote: its input position
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
        if _data_dependent(n):
            raise NotImplementedError(f"{n.format_node()}: its result's shape depends on values")
        qualname = _qualname(plan.get(n, n.target))
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
            if n.target is _aten._native_multi_head_attention.default and \
                    a.name == "need_weights":
                v = True  # a graph node returns tensors, not None: the weights, unused
            kind = a.kind
            if kind == "T" and isinstance(v, (bool, int, float)):
                kind = "s"  # a wrapped number
            kinds += kind + ("?" if a.optional else "")
            vals.append(ref(v, where))
        nodes.append((_node_op(schema, kinds), tuple(vals)))
        values[n] = _C.GraphValue(position)
        position += 1
        if n in plan:  # the written tensor's later uses read the new value
            target = tensor_of[n]
            for v, t in tensor_of.items():
                if t is target and v in values:
                    values[v] = values[n]
            if target.op in ("placeholder", "get_attr"):
                written_inputs[target] = placeholders.index(target) if target.op == \
                    "placeholder" else len(placeholders) + attrs.index(target)
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
    writebacks = [(index, template(target)) for target, index in written_inputs.items()]
    graph_id, info = client._graph_define(inputs, nodes, outs)
    return DefinedGraph(graph_id, info, passed, constants, shape, metas, writebacks)


def run(client, g, inputs):
    """One request: the graph on these OpdTensors; its outputs as OpdTensors, shaped as the
    traced function returned them."""
    device = next((t.device for t in inputs if isinstance(t, OpdTensor)), torch.device("cpu"))
    refs = [t._opd if isinstance(t, OpdTensor) else t for t in (inputs[i] for i in g.passed)]
    refs += [t._opd for t in g.constants]
    outs = client._submit(g.run_op, tuple(refs), len(g.metas)).outputs
    tensors = [OpdTensor(r, m, client, device) for r, m in zip(outs, g.metas)]
    given = list(inputs) + list(g.constants)
    for index, k in g.writebacks:  # written inputs get their new values, behind the run
        _copy_into(client, given[index], tensors[k])
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
