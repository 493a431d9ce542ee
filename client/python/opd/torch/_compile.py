"""opd.torch.compile: a function or module traced with make_fx into ATen operators (as the
graph fixtures were made), its parameters uploaded once, the graph run in the daemon
([Note: compile's two forms] in _graph.py), re-traced when the inputs' shapes or dtypes
change, the graphs of the last `cache_size` signatures kept."""
import collections
import warnings

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.utils.stateless import functional_call

from . import _graph
from ._tensor import OpdFallbackWarning, OpdTensor, _remote_tensor, remote

__all__ = ["compile", "CompiledFunction"]


def _example(x):
    """A local tensor like x to trace with (the values do not matter, and the trace must not
    write the caller's tensor)."""
    if isinstance(x, torch.Tensor):
        return torch.zeros(tuple(x.shape), dtype=x.dtype)
    return x


def _signature(x):
    if isinstance(x, torch.Tensor):
        return ("tensor", tuple(x.shape), x.dtype)
    try:
        hash(x)
        return ("value", x)
    except TypeError:
        return ("object", id(x))


class CompiledFunction:
    """The callable compile returns: ``f(*args)`` runs the traced graph of these argument
    shapes and dtypes in the daemon and returns OpdTensors. Arguments may be local tensors
    (uploaded for the call) or OpdTensors."""

    def __init__(self, fn, client, cache_size):
        if cache_size < 1:
            raise ValueError("cache_size must be at least 1")
        self.client = client
        self.cache_size = cache_size
        self._fn = fn
        self._graphs = collections.OrderedDict()
        self.traces = 0
        #: why a graph of this callable runs op by op (the first such reason), or None
        self.fallback_reason = None
        self._names, self._params, self._examples = [], [], []
        #: the module's tensors packed into one daemon tensor per dtype ([Note: Packed
        #: parameters]): parameter position -> (packed tensor, sizes, strides, offset)
        self._packing = {}
        if isinstance(fn, torch.nn.Module):
            seen, local = {}, []
            # each tensor once, under its first name (functional_call ties the others to it)
            for name, t in list(fn.named_parameters()) + list(fn.named_buffers()):
                if id(t) in seen:
                    continue
                seen[id(t)] = True
                self._names.append(name)
                self._params.append(t if isinstance(t, OpdTensor) else None)
                if not isinstance(t, OpdTensor):
                    local.append((len(self._params) - 1, t.detach()))
                # traced with zeros, never the module's own tensors: a trace in train mode
                # runs batch norm, which would update the local module's running statistics
                self._examples.append((tuple(t.shape), t.dtype))
            self._pack(local)

    def _pack(self, local):
        """[Note: Packed parameters]
        A module's local parameters and buffers go to the daemon as one contiguous tensor per
        dtype, each parameter a view of it (aten::as_strided): a graph then takes a few inputs
        however many parameters the module has (resnet18 has 122, more than a graph's inputs
        and a call's arguments may number), and a parameter's view node in the graph reads
        (and batch norm's running statistics write) the packed tensor itself. The views are
        the compiled callable's parameters (``_params``), OpdTensors like any."""
        by_dtype = collections.defaultdict(list)
        for position, t in local:
            by_dtype[t.dtype].append((position, t))
        for dtype, group in by_dtype.items():
            packed = remote(torch.cat([t.reshape(-1) for _, t in group]), self.client)
            offset = 0
            for position, t in group:
                sizes = tuple(t.shape)
                strides = tuple(torch.empty(sizes, device="meta").stride())
                self._params[position] = torch.ops.aten.as_strided.default(
                    packed, sizes, strides, offset)
                self._packing[position] = (packed, sizes, strides, offset)
                offset += t.numel()

    def _trace(self, args):
        names, n = self._names, len(self._names)
        module = self._fn

        def flat(*xs):
            if n:
                return functional_call(module, dict(zip(names, xs[:n])), tuple(xs[n:]))
            return module(*xs)

        with torch.no_grad():
            examples = [torch.zeros(shape, dtype=dtype) for shape, dtype in self._examples]
            gm = make_fx(flat)(*examples, *[_example(a) for a in args])
        # constants the trace captured (tensors made in forward) go to the daemon once
        for name, value in list(gm.named_buffers()) + [
                (k, v) for k, v in vars(gm).items() if isinstance(v, torch.Tensor)]:
            if "." not in name and not isinstance(value, OpdTensor):
                setattr(gm, name, remote(value, self.client))
        self.traces += 1
        graph = _graph.define_graph(self.client, gm, self._packing)
        if graph.fallback_reason is not None and self.fallback_reason is None:
            self.fallback_reason = graph.fallback_reason
            warnings.warn(f"opd.torch.compile runs this graph op by op, one request per "
                          f"operator: {graph.fallback_reason}", OpdFallbackWarning, stacklevel=4)
        return graph

    def graph_for(self, *args):
        """The graph that runs these arguments (traced now if their signature is new)."""
        key = tuple(_signature(a) for a in args)
        graph = self._graphs.get(key)
        if graph is not None:
            self._graphs.move_to_end(key)
            return graph
        graph = self._graphs[key] = self._trace(args)
        while len(self._graphs) > self.cache_size:
            _, old = self._graphs.popitem(last=False)
            old.release()
        return graph

    def __call__(self, *args):
        graph = self.graph_for(*args)
        # local tensors are uploaded for the call, without waiting (a copy: the caller may
        # change theirs as soon as this returns)
        inputs = [_remote_tensor(self.client, a.detach().clone(), None)
                  if isinstance(a, torch.Tensor) and not isinstance(a, OpdTensor) else a
                  for a in args]
        with torch.no_grad():
            return graph.run(self._params + inputs)

    @property
    def cached_signatures(self):
        return len(self._graphs)


def compile(fn_or_module, client, *, cache_size=8):
    """Traces ``fn_or_module`` with make_fx (ATen operators) on the first call of each input
    signature and runs the graph in the daemon; a module's parameters and buffers are
    uploaded once, here. The graph runs in the daemon as one request per call, or op by op
    when the daemon's graph API cannot express it ([Note: compile's two forms])."""
    return CompiledFunction(fn_or_module, client, cache_size)
