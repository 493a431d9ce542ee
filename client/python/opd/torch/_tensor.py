"""OpdTensor and remote(): torch tensors held by the daemon. Every ATen operator PyTorch
dispatches on an OpdTensor is sent to the daemon as a call without waiting; its result's
shape, strides and dtype come from running the operator on meta tensors here, so the result
is an OpdTensor at once and the next operator can be sent behind it
([Note: The Python client's request engine] in client/python/src/opdpy.h). docs/PYTHON.md
explains the choices."""
import contextlib
import math
import threading
import warnings

import torch
import torch._refs
from torch._decomp import decomposition_table
from torch.utils._mode_utils import no_dispatch
from torch.utils._pytree import tree_map

from .. import _C
from . import _plans

__all__ = ["OpdTensor", "remote", "cpu_fallback", "OpdFallbackWarning", "OpdUnsupported"]


class OpdFallbackWarning(UserWarning):
    """An operator opd has no kernel for ran on the local CPU (opd.torch.cpu_fallback)."""


_state = threading.local()
#: the operators run through PyTorch's decompositions because the daemon lacks them
decomposed = set()


def _fallback_enabled():
    return getattr(_state, "fallback", False)


@contextlib.contextmanager
def cpu_fallback(enabled=True):
    """``with opd.torch.cpu_fallback(): ...``: an operator the daemon has no kernel for runs on
    the local CPU (its OpdTensor arguments downloaded, its results uploaded) with an
    OpdFallbackWarning, instead of raising NotImplementedError."""
    before = _fallback_enabled()
    _state.fallback = enabled
    try:
        yield
    finally:
        _state.fallback = before


_MEMORY_FORMATS = {torch.contiguous_format: 0, torch.preserve_format: 1,
                   torch.channels_last: 2, torch.channels_last_3d: 3}
_LAYOUTS = {torch.strided: 0}
_MISSING = object()
_META = torch.device("meta")


class OpdTensor(torch.Tensor):
    """A tensor held by an opd daemon. ``.cpu()`` (also ``.numpy()``, ``.tolist()``,
    ``.item()``) brings its value here; every other operation runs in the daemon. Its shape,
    strides and dtype are known here without asking the daemon."""

    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, ref, meta, client, device):
        r = torch.Tensor._make_wrapper_subclass(
            cls, meta.size(), strides=meta.stride(), storage_offset=meta.storage_offset(),
            dtype=meta.dtype, device=device, requires_grad=False)
        r._opd = ref
        r._meta = meta
        r._client = client
        return r

    def __repr__(self, *, tensor_contents=None):
        state = "pending" if not self._opd.ready else (
            "failed" if self._opd.error is not None else "held")
        return (f"OpdTensor(shape={tuple(self.shape)}, dtype={self.dtype}, device={self.device}, "
                f"remote={self._client.url}, {state})")

    __str__ = __repr__

    def __format__(self, spec):
        return repr(self)

    def cpu(self, memory_format=torch.preserve_format):
        """The value as a plain local torch.Tensor (read straight into its memory)."""
        out = torch.empty(tuple(self.shape), dtype=self.dtype)
        buf = out.view(torch.int16) if self.dtype == torch.bfloat16 else out
        self._client.download(self._opd, out=buf.numpy())
        return out

    def numpy(self, *, force=False):
        return self.cpu().numpy()

    def tolist(self):
        return self.cpu().tolist()

    def to(self, *args, **kwargs):
        """``.to("cpu")`` brings the value here (as ``.cpu()``); a dtype alone converts in the
        daemon."""
        # _parse_to knows no copy argument (keyword, or the second positional bool)
        parse_kwargs = {k: v for k, v in kwargs.items() if k != "copy"}
        bools = [i for i, a in enumerate(args) if isinstance(a, bool)]
        parse_args = [a for i, a in enumerate(args) if i not in bools[1:2]]
        device, dtype, _, _ = torch._C._nn._parse_to(*parse_args, **parse_kwargs)
        if device is not None and device.type == "cpu":
            local = self.cpu()  # a new tensor: copy=True holds already
            return local.to(dtype) if dtype is not None else local
        return super().to(*args, **kwargs)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs or {})


def _first_opd(args, kwargs):
    """The first OpdTensor among an ATen call's arguments (which nest one level at most:
    Tensor[] and Tensor?[]), checking that they share one connection."""
    first = None
    for a in (*args, *kwargs.values()):
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(t, OpdTensor):
                if first is None:
                    first = t
                elif t._client is not first._client:
                    raise ValueError("an operation on OpdTensors of two different opd "
                                     "connections")
    return first


def _map_args(fn, args):
    return tuple(type(a)(fn(v) for v in a) if isinstance(a, (list, tuple)) else fn(a)
                 for a in args)


def _to_meta(x):
    if isinstance(x, OpdTensor):
        return x._meta
    if isinstance(x, torch.Tensor):
        return x.to("meta")
    return x


class _OpInfo:
    """What the dispatch of one ATen overload needs, computed once per overload."""
    __slots__ = ("qualname", "schema", "aliased_outputs", "written", "views")

    def __init__(self, func, client):
        s = func._schema
        self.qualname = s.name + ("." + s.overload_name if s.overload_name else "")
        self.schema = client.schema(self.qualname)
        # returns that are written arguments (in-place and out= forms): index -> argument name
        written = {a.alias_info: a.name for a in s.arguments
                   if a.alias_info is not None and a.alias_info.is_write}
        self.aliased_outputs = [written.get(r.alias_info) if r.alias_info is not None and
                                r.alias_info.is_write else None for r in s.returns]
        # the written arguments: (position, name)
        self.written = tuple((i, a.name) for i, a in enumerate(s.arguments)
                             if a.alias_info is not None and a.alias_info.is_write)
        # a view operator: results that alias an argument without writing it
        self.views = not self.written and any(
            r.alias_info is not None and not r.alias_info.is_write for r in s.returns)


_INFOS = {}


def _info(func, client):
    key = (func, id(client._schemas))
    info = _INFOS.get(key)
    if info is None:
        info = _INFOS[key] = _OpInfo(func, client)
    return info


_LITERALS = {}


def _literal(value, dtype):
    """A 0-d tensor passed by value: a Python number (as ``dtype``) or a 0-d CPU tensor."""
    if isinstance(value, torch.Tensor):
        t = value.detach().contiguous()
        key = None
    else:
        key = (type(value), value, dtype, math.copysign(1.0, value))  # 0.0 is not -0.0
        lit = _LITERALS.get(key)
        if lit is not None:
            return lit
        t = torch.tensor(value, dtype=dtype)
    raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
    lit = _C.Literal(t.dtype, tuple(t.shape), raw)
    if key is not None and len(_LITERALS) < 4096:
        _LITERALS[key] = lit
    return lit


_SCALAR_DTYPES = {}


def _scalar_dtype(value, tensors):
    """The dtype a Python number at a Tensor argument takes so that the daemon promotes it as
    PyTorch promotes a wrapped number: the result type of the number with the other tensor
    arguments (those that are not bool first). Cached by what decides it."""
    cands = [t for t in tensors if t.dtype != torch.bool] or tensors
    key = (type(value), torch.get_default_dtype(),
           tuple((t.dtype, t.dim() == 0) for t in cands))
    dtype = _SCALAR_DTYPES.get(key)
    if dtype is not None:
        return dtype
    for t in cands:
        d = torch.result_type(t, value)
        dtype = d if dtype is None else torch.promote_types(dtype, d)
    if dtype is None:
        dtype = (torch.bool if isinstance(value, bool) else
                 torch.int64 if isinstance(value, int) else torch.get_default_dtype())
    if len(_SCALAR_DTYPES) < 1024:
        _SCALAR_DTYPES[key] = dtype
    return dtype


_SMALL_UPLOAD = 1 << 20


def _local_tensor(client, t):
    """A local tensor used with OpdTensors: uploaded for the call (0-d CPU ones by value)."""
    if t.device.type == "meta":
        raise ValueError("a meta tensor has no data to send to the daemon")
    if t.dim() == 0 and t.device.type == "cpu":
        return _literal(t, None)
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.numel() * t.element_size() <= _SMALL_UPLOAD:
        # the call returns before the upload has gone: send a copy the caller cannot change
        return client.upload_async(t.clone(memory_format=torch.contiguous_format)).outputs[0]
    return client.upload(t)


def _convert(client, kind, value, meta_tensors):
    """One argument as the extension takes it; meta_tensors() gives the call's tensors on
    meta (for the dtype of a Python number at a Tensor argument)."""
    if isinstance(value, OpdTensor):
        return value._opd
    if isinstance(value, torch.Tensor):
        return _local_tensor(client, value)
    if kind == "T" and isinstance(value, (bool, int, float)):
        return _literal(value, _scalar_dtype(value, meta_tensors()))
    if isinstance(value, (list, tuple)) and kind in ("L", "l"):
        return [None if v is None else _convert(client, "T", v, meta_tensors) for v in value]
    if isinstance(value, torch.memory_format):
        return _MEMORY_FORMATS[value]
    if isinstance(value, torch.layout):
        return _LAYOUTS[value]
    return value


def _call_args(client, schema, args, kwargs, meta_args, meta_kwargs):
    """The call's arguments in schema order, up to the last one given (the daemon fills in
    the defaults after it; missing ones before it are sent as their defaults)."""
    arguments = schema.arguments
    n = len(args)
    last = n - 1
    if kwargs:
        last = max([last] + [i for i, a in enumerate(arguments) if a.name in kwargs])
    found = []

    def meta_tensors():
        if not found:
            found.append([m for x in (*meta_args, *meta_kwargs.values())
                          for m in (x if isinstance(x, (list, tuple)) else (x,))
                          if isinstance(m, torch.Tensor)])
        return found[0]

    out = []
    for i in range(last + 1):
        a = arguments[i]
        v = args[i] if i < n else kwargs.get(a.name, _MISSING)
        if v is _MISSING:
            v = a.default if a.has_default else None
        out.append(v._opd if type(v) is OpdTensor else _convert(client, a.kind, v, meta_tensors))
    return tuple(out)


def _wrap(client, refs, meta_out, device):
    """OpdTensors for the tensors of meta_out (a tensor, or a tuple or list of them and
    other values), in order."""
    if isinstance(meta_out, torch.Tensor):
        return OpdTensor(refs[0], meta_out, client, device)
    if isinstance(meta_out, (list, tuple)):
        out, k = [], 0
        for m in meta_out:
            if isinstance(m, torch.Tensor):
                out.append(OpdTensor(refs[k], m, client, device))
                k += 1
            else:
                out.append(m)
        return type(meta_out)(out) if isinstance(meta_out, list) else tuple(out)
    return meta_out


def _count_tensors(meta_out):
    if isinstance(meta_out, torch.Tensor):
        return 1
    if isinstance(meta_out, (list, tuple)):
        return sum(isinstance(m, torch.Tensor) for m in meta_out)
    return 0


class OpdUnsupported(NotImplementedError):
    """What opd cannot do with OpdTensors, named: an operator the daemon lacks (and PyTorch has
    no decomposition of that the daemon can run), or a use the bridge does not support."""


def _not_implemented(qualname, client, defined=False):
    why = (f"the daemon at {client.url} defines it, but PyTorch has no meta kernel for it to "
           f"give its results' geometry here" if defined else
           f"the daemon at {client.url} does not define it")
    return OpdUnsupported(
        f"opd has no kernel for {qualname}: {why} (wrap the code in opd.torch.cpu_fallback() "
        f"to run such operators on the local CPU)")


_GEOMETRY_KNOWN = {}


def _geometry_known(func):
    """Whether the bridge can give func's results their geometry before the daemon answers:
    PyTorch has a meta kernel for it (its own or a composite's), or _META_KERNELS does. An
    operator the daemon defines without either goes the way of one it does not define
    ([Note: What runs where])."""
    known = _GEOMETRY_KNOWN.get(func)
    if known is None:
        known = func in _META_KERNELS or torch._C._dispatch_has_computed_kernel_for_dispatch_key(
            func.name(), "Meta")
        _GEOMETRY_KNOWN[func] = known
    return known


def _written_args(info, args, kwargs):
    return [args[i] if i < len(args) else kwargs.get(name) for i, name in info.written]


def _here(x):
    return x.cpu() if isinstance(x, OpdTensor) else x


# [Note: Mixing local tensors and OpdTensors]
# An operator computes where the tensor it writes lives. One that writes a local tensor
# (out.copy_(r), out.add_(r), out= a local tensor) runs here on the local CPU, its OpdTensor
# arguments downloaded, so the local tensor holds the result (sending it to the daemon would
# write the daemon's copy of it and leave the local one as it was). One that writes an
# OpdTensor, or nothing, runs in the daemon, local tensors uploaded for the call.
def _run_here(func, args, kwargs):
    """An operator that writes a local tensor, run on the local CPU."""
    local_args, local_kwargs = tree_map(_here, (args, kwargs))
    return func(*local_args, **local_kwargs)


# operators whose meta kernel gives some results other strides than the CPU kernel (and the
# daemon, which follows it) does: those results are contiguous. native_layer_norm's meta
# output keeps a permuted input's layout where the CPU kernel's is contiguous.
_CONTIGUOUS_RESULTS = {torch.ops.aten.native_layer_norm.default: (0,)}


def _aminmax_cpu_shape(meta_out, args, kwargs):
    """aminmax of a 0-d input over dim 0 with keepdim: the CPU kernel (and the daemon) give
    shape (1,), its meta kernel ()."""
    x = args[0]
    if x.dim() == 0 and kwargs.get("dim") is not None and kwargs.get("keepdim", False):
        return type(meta_out)(torch.empty((1,), dtype=t.dtype, device="meta") for t in meta_out)
    return meta_out


def _batch_norm_cpu_shape(meta_out, args, kwargs):
    """native_batch_norm in eval mode: the CPU kernel (and the daemon) save no statistics
    (empty results), its meta kernel gives them the channels' size."""
    training = args[5] if len(args) > 5 else kwargs["training"]
    if training:
        return meta_out
    empty = torch.empty((0,), dtype=meta_out[1].dtype, device="meta")
    return (meta_out[0], empty, torch.empty((0,), dtype=meta_out[2].dtype, device="meta"))


# operators whose meta kernel gives some results another shape than the CPU kernel (and the
# daemon, which follows it) does
_CPU_SHAPES = {torch.ops.aten.aminmax.default: _aminmax_cpu_shape,
               torch.ops.aten.native_batch_norm.default: _batch_norm_cpu_shape}


def _meta_like(t, shape=None):
    return torch.empty(t.shape if shape is None else shape, dtype=t.dtype, device="meta")


def _nll_loss2d_forward_meta(self, target, weight, reduction, ignore_index):
    return _meta_like(self, target.shape if reduction == 0 else ()), _meta_like(self, ())


def _contiguous_results(meta_out, which):
    out = list(meta_out)
    for i in which:
        out[i] = torch.empty(out[i].shape, dtype=out[i].dtype, device="meta")
    return type(meta_out)(out)


def _meta_call(func, info, args, kwargs):
    """The operator on meta tensors: the result's geometry and PyTorch's argument checks. A
    written OpdTensor is given as a fresh meta alias, so that an operator that would change its
    shape or strides (resize_, an out= that must be resized) is refused, naming
    itself, instead of leaving the OpdTensor's geometry and the daemon's apart."""
    meta_args = _map_args(_to_meta, args)
    meta_kwargs = {k: v for k, v in zip(kwargs, _map_args(_to_meta, kwargs.values()))}
    if meta_kwargs.get("device") is not None:  # the daemon's tensors are meta tensors here
        meta_kwargs["device"] = _META
    if not info.written:
        meta_out = _META_KERNELS.get(func, func)(*meta_args, **meta_kwargs)
        if func in _CONTIGUOUS_RESULTS:
            meta_out = _contiguous_results(meta_out, _CONTIGUOUS_RESULTS[func])
        if func in _CPU_SHAPES:
            meta_out = _CPU_SHAPES[func](meta_out, meta_args, meta_kwargs)
        return meta_args, meta_kwargs, meta_out
    meta_args, meta_kwargs = list(meta_args), dict(meta_kwargs)
    checks = []
    for i, name in info.written:
        holder, key = (meta_args, i) if i < len(meta_args) else (meta_kwargs, name)
        m = holder[key] if (i < len(meta_args) or name in meta_kwargs) else None
        if isinstance(m, torch.Tensor):
            alias = m.as_strided(m.size(), m.stride(), m.storage_offset())
            holder[key] = alias
            checks.append((alias, m))
    meta_out = func(*meta_args, **meta_kwargs)
    for alias, m in checks:
        if alias.size() != m.size() or alias.stride() != m.stride() or \
                alias.storage_offset() != m.storage_offset():
            raise OpdUnsupported(
                f"{info.qualname} would change the shape of an OpdTensor in place "
                f"({tuple(m.shape)} to {tuple(alias.shape)}): opd does not support that")
    return tuple(meta_args), meta_kwargs, meta_out


_aten = torch.ops.aten
# in-place operators that make a tensor a view of itself, and the view they make
_INPLACE_VIEWS = {
    _aten.squeeze_.default: _aten.squeeze.default, _aten.squeeze_.dim: _aten.squeeze.dim,
    _aten.unsqueeze_.default: _aten.unsqueeze.default, _aten.t_.default: _aten.t.default,
    _aten.transpose_.default: _aten.transpose.int,
    _aten.as_strided_.default: _aten.as_strided.default,
}


def _rebind(t, view):
    """``t.squeeze_()`` and the like: t becomes the view (the daemon's tensor of the view, and
    its geometry here: the wrapper's own sizes and strides are set without dispatch)."""
    try:
        with no_dispatch():
            torch.ops.aten.as_strided_.default(t, view.size(), view.stride(),
                                               view.storage_offset())
    except RuntimeError as e:
        raise OpdUnsupported(f"cannot give an OpdTensor the geometry {tuple(view.shape)} in "
                             f"place: {e}") from None
    t._opd, t._meta = view._opd, view._meta
    return t


def _dispatch(func, args, kwargs):
    cached = _plans.run(func, args, kwargs, OpdTensor, _wrap)  # [Note: Cached dispatch plans]
    if cached is not _plans.MISS:
        return cached
    first = _first_opd(args, kwargs)
    client = first._client
    info = _info(func, client)
    aten = torch.ops.aten
    if func is aten._local_scalar_dense.default:
        return args[0].cpu().item()
    if func is aten._to_copy.default and kwargs.get("device") is not None and \
            torch.device(kwargs["device"]).type == "cpu" and isinstance(args[0], OpdTensor) and \
            args[0].device.type != "cpu":
        local = args[0].cpu()
        return local.to(kwargs.get("dtype") or local.dtype)
    if info.written and any(isinstance(w, torch.Tensor) and not isinstance(w, OpdTensor)
                            for w in _written_args(info, args, kwargs)):
        return _run_here(func, args, kwargs)
    if func in _INPLACE_VIEWS and isinstance(args[0], OpdTensor):
        return _rebind(args[0], _INPLACE_VIEWS[func](*args, **kwargs))
    if info.schema is None:
        return _without_kernel(func, info, client, args, kwargs)
    if func in _SPECIAL_CALLS:
        out = _SPECIAL_CALLS[func](func, info, client, args, kwargs)
        if out is not NotImplemented:
            return out
    if not _geometry_known(func):
        return _without_kernel(func, info, client, args, kwargs)
    meta_args, meta_kwargs, meta_out = _meta_call(func, info, args, kwargs)
    return _submit(func, info, client, first.device, args, kwargs, meta_args, meta_kwargs,
                   meta_out)


def _submit(func, info, client, device, args, kwargs, meta_args, meta_kwargs, meta_out):
    """The call sent to the daemon, its results OpdTensors of meta_out's geometry."""
    values = _call_args(client, info.schema, args, kwargs, meta_args, meta_kwargs)
    meta_out = _plans.learn(func, info, client, args, kwargs, values, meta_out, OpdTensor,
                            _SPECIAL_CALLS)
    refs = client._submit(info.schema.op, values, _count_tensors(meta_out)).outputs
    result = _wrap(client, refs, meta_out, device)
    if any(info.aliased_outputs):  # in-place and out=: the written argument itself
        return _written_result(func, info, args, kwargs, result)
    return result


# [Note: Results whose shape depends on values]
# nonzero, masked_select and indexing with a boolean mask have results whose size depends on
# the values, which PyTorch's meta kernels cannot give. Their size comes from the daemon: the
# number of nonzero elements (aten::count_nonzero of the tensor, or of the mask broadcast to
# the result's shape) is read back, one small round trip, and the call is then sent as any
# other with that geometry (the daemon's results are contiguous). Indexing with a mask is
# indexing with the mask's nonzero coordinates, as ATen itself rewrites it: one index tensor
# per dimension the mask covers, each a column of nonzero(mask).
def _count_nonzero(t):
    """The number of nonzero elements of t (counted by the daemon for an OpdTensor)."""
    return int(torch.count_nonzero(t).item())


def _contiguous_meta(shape, dtype):
    return torch.empty(shape, dtype=dtype, device="meta")


def _nonzero(func, info, client, args, kwargs):
    x = args[0] if args else kwargs["self"]
    meta_args, meta_kwargs = _map_args(_to_meta, args), {k: _to_meta(v) for k, v in
                                                         kwargs.items()}
    meta_out = _contiguous_meta((_count_nonzero(x), x.dim()), torch.int64)
    return _submit(func, info, client, _first_opd(args, kwargs).device, args, kwargs,
                   meta_args, meta_kwargs, meta_out)


def _masked_select(func, info, client, args, kwargs):
    names = ("self", "mask")
    x, mask = (args[i] if i < len(args) else kwargs[n] for i, n in enumerate(names))
    if mask.dtype not in (torch.bool, torch.uint8):
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = torch.broadcast_shapes(x.shape, mask.shape)  # PyTorch's error when they do not
    full = mask if tuple(mask.shape) == tuple(shape) else mask.expand(shape)
    meta_args, meta_kwargs = _map_args(_to_meta, args), {k: _to_meta(v) for k, v in
                                                         kwargs.items()}
    meta_out = _contiguous_meta((_count_nonzero(full),), x.dtype)
    return _submit(func, info, client, _first_opd(args, kwargs).device, args, kwargs,
                   meta_args, meta_kwargs, meta_out)


def _index_with_masks(func, info, client, args, kwargs):
    """aten::index.Tensor with boolean (or uint8) masks among the indices: the same indexing
    with each mask's nonzero coordinates; NotImplemented when there is no mask."""
    x, indices = args[0], args[1]
    if not any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8)
               for i in indices):
        return NotImplemented
    coordinates, dim = [], 0
    for index in indices:
        if not (isinstance(index, torch.Tensor) and index.dtype in (torch.bool, torch.uint8)):
            coordinates.append(index)
            dim += 1
            continue
        if index.dim() == 0:
            raise OpdUnsupported("aten::index.Tensor with a 0-d mask: opd does not support it")
        for j, size in enumerate(index.shape):
            if dim + j >= x.dim() or size != x.shape[dim + j]:
                raise IndexError(f"The shape of the mask {list(index.shape)} at index {j} does "
                                 f"not match the shape of the indexed tensor {list(x.shape)} "
                                 f"at index {dim + j}")
        where = torch.nonzero(index)  # an OpdTensor for an OpdTensor mask
        coordinates += [where.select(1, j) for j in range(index.dim())]
        dim += index.dim()
    return _dispatch(func, (x, coordinates), {})


def _convolution_backward_meta(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                               transposed, output_padding, groups, output_mask):
    """convolution_backward's results as the daemon makes them (contiguous; None where
    output_mask is false): PyTorch's meta kernel of it has none to call."""
    shapes = (input.shape, weight.shape, (grad_output.shape[1],))
    return tuple(torch.empty(shape, dtype=grad_output.dtype, device="meta") if asked else None
                 for shape, asked in zip(shapes, output_mask))


# [Note: Backward operators with an output mask]
# convolution_backward and the norms' backward operators compute only the gradients their
# bool[3] output_mask asks for and give None for the others, which a pending call cannot
# promise (its results are promised as tensors). The bridge asks the daemon for every gradient
# it can compute (conv: all; a norm's weight and bias gradients where the norm has them), which
# costs a little unused work (a first layer's input gradient, a bias-free conv's bias
# gradient) and keeps the call pipelined, and drops those the caller did not ask for. A mask
# still false after that is sent as it is and waited for: its results come back as values.
_OUTPUT_MASKS = {  # operator: (the output_mask's position, the gradients the daemon can give)
    torch.ops.aten.convolution_backward.default: (10, lambda a: (True, True, True)),
    torch.ops.aten.native_batch_norm_backward.default: (
        9, lambda a: (True, a[2] is not None, a[2] is not None)),
    torch.ops.aten.native_layer_norm_backward.default: (
        7, lambda a: (True, a[5] is not None, a[6] is not None)),
    torch.ops.aten.native_group_norm_backward.default: (
        9, lambda a: (True, a[4] is not None, a[4] is not None)),
}


def _max_unpool2d_meta(self, indices, output_size):
    return torch.empty((*self.shape[:-2], *output_size), dtype=self.dtype, device="meta")


def _count_nonzero_dims_meta(self, dim):
    dims = {d % max(self.dim(), 1) for d in dim}
    return torch.empty([s for i, s in enumerate(self.shape) if i not in dims], dtype=torch.int64,
                       device="meta")


def _count_nonzero_meta(self, dim=None):
    return _count_nonzero_dims_meta(self, range(self.dim()) if dim is None else [dim])


def _transformer_encoder_layer_meta(src, *args, **kwargs):
    return torch.empty(src.shape, dtype=src.dtype, device="meta")


def _take_meta(self, index):
    return torch.empty(index.shape, dtype=self.dtype, device="meta")


def _searchsorted_meta(sorted_sequence, self, *, out_int32=False, right=False, side=None,
                       sorter=None):
    return torch.empty(self.shape, dtype=torch.int32 if out_int32 else torch.int64,
                       device="meta")


def _kthvalue_meta(self, k, dim=-1, keepdim=False):
    """The daemon's kthvalue results are views of the sorted input (contiguous): its k-th
    position along dim (PyTorch's CPU kernel makes them contiguous; the values are the same)."""
    def view(dtype):
        t = torch.empty(self.shape, dtype=dtype, device="meta")
        if self.dim() == 0:
            return t
        d = dim % self.dim()
        return t.narrow(d, k - 1, 1) if keepdim else t.select(d, k - 1)
    return view(self.dtype), view(torch.int64)


def _pooled_size(size, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's pooling_output_shape."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = span // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def _max_pool3d_with_indices_meta(self, kernel_size, stride=(), padding=0, dilation=1,
                                  ceil_mode=False):
    def three(v, default):
        v = default if v is None or (isinstance(v, (list, tuple)) and not v) else v
        return list(v) * 3 if isinstance(v, (list, tuple)) and len(v) == 1 else \
            list(v) if isinstance(v, (list, tuple)) else [v] * 3
    k = three(kernel_size, kernel_size)
    st, pad, dil = three(stride, k), three(padding, 0), three(dilation, 1)
    spatial = [_pooled_size(self.shape[-3 + i], k[i], st[i], pad[i], dil[i], ceil_mode)
               for i in range(3)]
    shape = (*self.shape[:-3], *spatial)
    return (torch.empty(shape, dtype=self.dtype, device="meta"),
            torch.empty(shape, dtype=torch.int64, device="meta"))


# the results' geometry of operators PyTorch has no meta kernel of (the daemon's checks are the
# arguments' checks)
_META_KERNELS = {
    torch.ops.aten.take.default: _take_meta,
    torch.ops.aten._transformer_encoder_layer_fwd.default: _transformer_encoder_layer_meta,
    torch.ops.aten.searchsorted.Tensor: _searchsorted_meta,
    torch.ops.aten.kthvalue.default: _kthvalue_meta,
    torch.ops.aten.max_pool3d_with_indices.default: _max_pool3d_with_indices_meta,
    torch.ops.aten.convolution_backward.default: _convolution_backward_meta,
    torch.ops.aten.max_unpool2d.default: _max_unpool2d_meta,
    torch.ops.aten.count_nonzero.dim_IntList: _count_nonzero_dims_meta,
    torch.ops.aten.count_nonzero.default: _count_nonzero_meta,
    torch.ops.aten.nll_loss2d_forward.default: _nll_loss2d_forward_meta,
    torch.ops.aten._adaptive_avg_pool3d_backward.default: lambda grad, x: _meta_like(x),
    torch.ops.aten.channel_shuffle.default: lambda x, groups: _meta_like(x),
}


def _output_masked(func, info, client, args, kwargs):
    position, computable = _OUTPUT_MASKS[func]
    if kwargs or len(args) != position + 1:
        return NotImplemented
    asked = [bool(a) for a in args[position]]
    sent = [a or c for a, c in zip(asked, computable(args))]
    args = (*args[:position], sent)
    if func is torch.ops.aten.convolution_backward.default and not asked[2]:
        args = (*args[:3], None, *args[4:])  # autograd's bias_sizes of a bias-free conv: [0]
    meta_args = _map_args(_to_meta, args)
    meta_out = _META_KERNELS.get(func, func)(*meta_args)
    device = _first_opd(args, {}).device
    if all(sent):
        out = _submit(func, info, client, device, args, {}, meta_args, {}, meta_out)
    else:
        values = _call_args(client, info.schema, args, {}, meta_args, {})
        results = client._submit(info.schema.op, values, -1).result()
        out = tuple(None if r is None else OpdTensor(r, m, client, device)
                    for r, m in zip(results, meta_out))
    return tuple(o if a else None for o, a in zip(out, asked))


def _repeat_interleave(func, info, client, args, kwargs):
    """repeat_interleave.Tensor without output_size: its size (the sum of the repeats) read
    from the daemon, then the call with it."""
    if kwargs.get("output_size") is not None or len(args) != 1:
        return NotImplemented
    repeats = args[0]
    total = int(repeats.sum().item()) if repeats.numel() else 0
    return _dispatch(func, args, {**kwargs, "output_size": total})


def _unique2(func, info, client, args, kwargs):
    """_unique2: the number of unique values is the size of its first result, read from the
    daemon (a download of that result); the inverse has the input's shape where asked for,
    and the counts the first result's size (else both are empty, as on the CPU)."""
    names = ("self", "sorted", "return_inverse", "return_counts")
    defaults = (None, True, False, False)
    x, _, inverse, counts = (args[i] if i < len(args) else kwargs.get(n, defaults[i])
                             for i, n in enumerate(names))
    meta_args, meta_kwargs = _map_args(_to_meta, args), {k: _to_meta(v) for k, v in
                                                         kwargs.items()}
    values = _call_args(client, info.schema, args, kwargs, meta_args, meta_kwargs)
    refs = client._submit(info.schema.op, values, 3).outputs
    n = client.download(refs[0]).shape[0] if x.numel() else 0
    metas = (_contiguous_meta((n,), x.dtype),
             _contiguous_meta(x.shape if inverse else (0,), torch.int64),
             _contiguous_meta((n,) if counts else (0,), torch.int64))
    return _wrap(client, refs, metas, _first_opd(args, kwargs).device)


def _multi_head_attention(func, info, client, args, kwargs):
    """_native_multi_head_attention (PyTorch has no meta kernel of it): its output has the
    query's shape; its weights (B, T, S), or (B, H, T, S) per head, are None when need_weights
    is false, which a pending call cannot promise, so the daemon is asked for them and they are
    dropped ([Note: Backward operators with an output mask]: the same trade)."""
    names = [a.name for a in func._schema.arguments]
    bound = dict(zip(names, args), **kwargs)
    need, average = bound.get("need_weights", True), bound.get("average_attn_weights", True)
    query, key, heads = bound["query"], bound["key"], bound["num_head"]
    weights_shape = (query.shape[0], *(() if average else (heads,)), query.shape[1],
                     key.shape[1])
    sent = dict(bound, need_weights=True)  # by name: the daemon fills in the defaults
    meta_kwargs = {k: _to_meta(v) for k, v in sent.items()}
    meta_out = (torch.empty(query.shape, dtype=query.dtype, device="meta"),
                torch.empty(weights_shape, dtype=query.dtype, device="meta"))
    out, weights = _submit(func, info, client, _first_opd((), sent).device, (), sent, (),
                           meta_kwargs, meta_out)
    return out, (weights if need else None)


# operators the bridge calls its own way (NotImplemented: the ordinary way)
_SPECIAL_CALLS = {
    torch.ops.aten._native_multi_head_attention.default: _multi_head_attention,
    torch.ops.aten._unique2.default: _unique2,
    torch.ops.aten.repeat_interleave.Tensor: _repeat_interleave,
    torch.ops.aten.nonzero.default: _nonzero,
    torch.ops.aten.masked_select.default: _masked_select,
    torch.ops.aten.index.Tensor: _index_with_masks,
    **{op: _output_masked for op in _OUTPUT_MASKS},
}


def _written_result(func, info, args, kwargs, result):
    names = [a.name for a in func._schema.arguments]
    written = [args[names.index(n)] if names.index(n) < len(args) else kwargs[n]
               for n in info.aliased_outputs if n is not None]
    return written[0] if len(written) == 1 and not isinstance(result, tuple) else \
        tuple(written)


# decompositions of PyTorch's table that give other values than its kernels, and the ones used
# instead: aten::logsumexp's subtracts an infinite maximum (NaN where eager gives -inf)
_DECOMPOSITION_FIXES = {torch.ops.aten.logsumexp.default: torch._refs.logsumexp}


def _equal(self, other):
    if self.shape != other.shape:
        return False
    return bool(torch.ops.aten.eq.Tensor(self, other).all())


def _check_errors_here(info, api_name, *, is_matrix):
    """_linalg_check_errors only reads the LAPACK infos to raise PyTorch's error: they are read
    back and checked here (nothing is computed locally)."""
    torch.ops.aten._linalg_check_errors.default(_here(info), api_name, is_matrix=is_matrix)


def _to_default_float(x):
    if x.is_floating_point():
        return x
    return torch.ops.aten._to_copy.default(x, dtype=torch.get_default_dtype())


def _deg2rad(self):  # as ATen: a product with pi / 180 as a wrapped number
    return torch.ops.aten.mul.Tensor(_to_default_float(self), math.pi / 180)


def _rad2deg(self):
    return torch.ops.aten.mul.Tensor(_to_default_float(self), 180 / math.pi)


def _angle(self):
    """angle of a real tensor, as ATen: pi where negative, else 0, NaN kept."""
    if self.is_complex():
        return NotImplemented
    x = _to_default_float(self)
    negative = torch.ops.aten._to_copy.default(torch.ops.aten.lt.Scalar(x, 0), dtype=x.dtype)
    pi = torch.ops.aten.mul.Tensor(negative, math.pi)
    return torch.ops.aten.where.self(torch.ops.aten.isnan.default(x), x, pi)


def _narrow_copy(self, dim, start, length):
    return torch.ops.aten.clone.default(torch.ops.aten.narrow.default(self, dim, start, length),
                                        memory_format=torch.contiguous_format)


def _dist(self, other, p=2):  # as ATen: norm(self - other, p)
    return torch.ops.aten.norm.Scalar(torch.ops.aten.sub.Tensor(self, other), p)


def _isin(elements, test_elements, *, assume_unique=False, invert=False):
    """isin as its elementwise comparison with every test element (ATen's own way for few
    test elements; a boolean result, exact whatever the way)."""
    elements = elements if isinstance(elements, torch.Tensor) else torch.tensor(elements)
    tests = test_elements if isinstance(test_elements, torch.Tensor) else \
        torch.tensor(test_elements)
    found = torch.ops.aten.eq.Tensor(torch.ops.aten.unsqueeze.default(elements, -1),
                                     torch.ops.aten.reshape.default(tests, [-1]))
    found = torch.ops.aten.any.dim(found, -1)
    return torch.ops.aten.logical_not.default(found) if invert else found


def _logaddexp2(self, other):
    """As ATen's kernel: max + log2(1 + 2^-|a - b|), and a where both are the same infinity."""
    aten = torch.ops.aten
    a, b = (_to_default_float(t) for t in (self, other))
    m = aten.maximum.default(a, b)
    spread = aten.neg.default(aten.abs.default(aten.sub.Tensor(a, b)))
    r = aten.add.Tensor(m, aten.log2.default(aten.add.Tensor(aten.pow.Scalar(2.0, spread), 1)))
    same_infinity = aten.logical_and.default(aten.isinf.default(a), aten.eq.Tensor(a, b))
    return aten.where.self(same_infinity, a, r)


def _renorm(self, p, dim, maxnorm):
    """As ATen: the norms of the sub-tensors along dim in the accumulation type (double for
    float), each scaled to maxnorm / (norm + 1e-7) where it exceeds maxnorm."""
    if not self.is_floating_point() or self.dim() == 0:
        return NotImplemented
    aten = torch.ops.aten
    acc = torch.float64 if self.dtype in (torch.float32, torch.float64) else torch.float32
    reduce = [d for d in range(self.dim()) if d != dim % self.dim()]
    norm = aten.linalg_vector_norm.default(self, p, reduce, True, dtype=acc)
    factor = aten.where.self(aten.gt.Scalar(norm, maxnorm),
                             aten.div.Tensor(aten.full_like.default(norm, maxnorm),
                                             aten.add.Scalar(norm, 1e-7)),
                             aten.full_like.default(norm, 1))
    return aten._to_copy.default(aten.mul.Tensor(self, factor), dtype=self.dtype)


# operators PyTorch has no decomposition of, written in others here
_BRIDGE_DECOMPOSITIONS = {
    torch.ops.aten.renorm.default: _renorm,
    torch.ops.aten.logaddexp2.default: _logaddexp2,
    torch.ops.aten.deg2rad.default: _deg2rad,
    torch.ops.aten.rad2deg.default: _rad2deg,
    torch.ops.aten.angle.default: _angle,
    torch.ops.aten.narrow_copy.default: _narrow_copy,
    torch.ops.aten.dist.default: _dist,
    torch.ops.aten.isin.Tensor_Tensor: _isin,
    torch.ops.aten.isin.Tensor_Scalar: _isin,
    torch.ops.aten.isin.Scalar_Tensor: _isin,
    torch.ops.aten.equal.default: _equal,
    torch.ops.aten.allclose.default: torch._refs.allclose,
    torch.ops.aten._linalg_check_errors.default: _check_errors_here,
}
# decompositions that are less precise than the kernels for some arguments: not used for them
# (upsample_bicubic2d's computes its source positions in float32, also for float64 images)
_INEXACT_DECOMPOSITIONS = {
    torch.ops.aten.upsample_bicubic2d.default: lambda a, *_, **__: a.dtype == torch.float64,
    torch.ops.aten.upsample_bicubic2d.vec: lambda a, *_, **__: a.dtype == torch.float64,
}


def _decomposition(func):
    """PyTorch's own way of writing func in other operators: its CompositeImplicitAutograd
    kernel (what eager itself runs: aten::to.dtype is _to_copy), its decomposition table, a
    primitive's ATen implementation (prims::*); None when it has none."""
    if torch._C._dispatch_has_kernel_for_dispatch_key(
            func.name(), torch._C.DispatchKey.CompositeImplicitAutograd):
        return func.decompose
    d = _DECOMPOSITION_FIXES.get(func) or _BRIDGE_DECOMPOSITIONS.get(func) or \
        decomposition_table.get(func)
    if d is not None:
        inexact = _INEXACT_DECOMPOSITIONS.get(func)
        return d if inexact is None else (
            lambda *a, **k: NotImplemented if inexact(*a, **k) else d(*a, **k))
    prim = getattr(func, "prim_impl", None)
    if prim is not None:
        return prim
    return _functional_form(func)


def _functional_form(func):
    """An in-place operator (``addcmul_``) as its functional form (``addcmul``), whose result
    _settle_written copies into the written tensor, as functionalization does; None when it
    has none."""
    name = func._schema.name
    if not name.endswith("_") or name.endswith("__"):
        return None
    packet = getattr(torch.ops.aten, name.split("::")[-1][:-1], None)
    functional = getattr(packet, func._overloadname, None) if packet is not None else None
    if functional is None or any(a.alias_info is not None for a in functional._schema.arguments):
        return None
    # the same arguments in the same order (polygamma_(self, n) is polygamma(n, self))
    if [(a.name, str(a.type)) for a in functional._schema.arguments] != \
            [(a.name, str(a.type)) for a in func._schema.arguments]:
        return None
    return functional


def _copy_into(client, target, source):
    """target's memory in the daemon gets source's values (views write through)."""
    client.call_async("aten::copy_", target._opd, _convert(client, "T", source, lambda: ()))


def _as_views(func, info, client, args, kwargs):
    """A view operator the daemon lacks: each result is aten::as_strided of the argument it
    views, with the geometry PyTorch gives it on meta, so that writes through it reach the
    viewed tensor as they do in PyTorch. None when PyTorch has no meta kernel for it."""
    base = args[0] if args and isinstance(args[0], OpdTensor) else None
    if base is None or client.schema("aten::as_strided") is None:
        return None
    try:
        _, _, meta_out = _meta_call(func, info, args, kwargs)
    except NotImplementedError:
        return None
    outs = [meta_out] if isinstance(meta_out, torch.Tensor) else list(meta_out)
    if not all(isinstance(m, torch.Tensor) and m.dtype == base.dtype for m in outs):
        return None
    views = [_dispatch(torch.ops.aten.as_strided.default,
                       (base, list(m.size()), list(m.stride()), m.storage_offset()), {})
             for m in outs]
    return views[0] if isinstance(meta_out, torch.Tensor) else type(meta_out)(views)


def _made_in_daemon(func, info, client, args, kwargs):
    """The *_like and new_* factories, which take an OpdTensor for its geometry only: made in
    the daemon (aten::empty_strided with PyTorch's geometry from meta, then aten::fill_), so
    that autograd's ones_like and an optimizer's zeros_like stay there."""
    value = _LIKE_VALUES.get(func)
    if value is None or client.schema("aten::empty_strided") is None:
        return None
    _, _, m = _meta_call(func, info, args, kwargs)
    if not isinstance(m, torch.Tensor) or m.layout != torch.strided:
        return None
    first = _first_opd(args, kwargs)
    schema = client.schema("aten::empty_strided")
    ref = client._submit(schema.op, (list(m.size()), list(m.stride()), m.dtype), 1).outputs[0]
    out = OpdTensor(ref, m, client, first.device)
    fill = value(args, kwargs)
    if fill is not None:
        _dispatch(torch.ops.aten.fill_.Scalar, (out, fill), {})
    return out


def _like_fill(position):
    return lambda args, kwargs: kwargs["fill_value"] if "fill_value" in kwargs else args[position]


_LIKE_VALUES = {
    torch.ops.aten.zeros_like.default: lambda a, k: 0,
    torch.ops.aten.ones_like.default: lambda a, k: 1,
    torch.ops.aten.full_like.default: _like_fill(1),
    torch.ops.aten.empty_like.default: lambda a, k: None,
    torch.ops.aten.new_zeros.default: lambda a, k: 0,
    torch.ops.aten.new_ones.default: lambda a, k: 1,
    torch.ops.aten.new_full.default: _like_fill(2),
    torch.ops.aten.new_empty.default: lambda a, k: None,
    torch.ops.aten.new_empty_strided.default: lambda a, k: None,
}


# [Note: What runs where]
# An operator the daemon defines runs there. One it does not: a view operator becomes
# aten::as_strided of the tensor it views (geometry from meta), so that writes through the view
# reach the viewed tensor; else PyTorch's own way of writing it in other operators
# (_decomposition: CompositeImplicitAutograd kernel, decomposition table with its known-bad
# entries corrected or skipped, a primitive's ATen implementation), whose pieces come back here;
# an operator met again inside its own decomposition has no way left. Then the CPU fallback when
# enabled (_on_cpu), else OpdUnsupported naming the operator. Nothing is computed locally in
# silence: the fallback warns, and the one other local computation is an operator that writes a
# local tensor ([Note: Mixing local tensors and OpdTensors]).
def _without_kernel(func, info, client, args, kwargs):
    """An operator the daemon does not define: a view as as_strided, else PyTorch's own
    decomposition of it into others (they run in the daemon), else the CPU fallback when
    enabled, else OpdUnsupported naming the operator ([Note: What runs where])."""
    if info.views:
        out = _as_views(func, info, client, args, kwargs)
        if out is not None:
            return out
    if func in _LIKE_VALUES:
        out = _made_in_daemon(func, info, client, args, kwargs)
        if out is not None:
            return out
    # an operator met again inside its own decomposition (a primitive's ATen implementation
    # is the ATen operator that decomposed into it) has no other way left
    active = _state.__dict__.setdefault("decomposing", set())
    decomposition = _decomposition(func) if func not in active else None
    if decomposition is not None and info.written:
        try:  # PyTorch's checks of the written tensor (dtype, shape), as the kernel makes them
            _meta_call(func, info, args, kwargs)
        except NotImplementedError as e:
            if isinstance(e, OpdUnsupported):
                raise
    if decomposition is not None:
        decomposed.add(info.qualname)
        active.add(func)
        try:
            out = decomposition(*args, **kwargs)
        except OpdUnsupported as e:
            if "in the decomposition of" not in str(e):
                raise OpdUnsupported(f"{e} (in the decomposition of {info.qualname})") from e
            raise
        finally:
            active.discard(func)
        if out is not NotImplemented:
            if info.written:
                return _settle_written(func, info, client, args, kwargs, out)
            return out
    if not _fallback_enabled():
        raise _not_implemented(info.qualname, client, defined=info.schema is not None)
    return _on_cpu(func, info, client, args, kwargs)


def _settle_written(func, info, client, args, kwargs, out):
    """After a decomposition of an in-place or out= operator: the written argument holds the
    result (a decomposition that computed it functionally gets it copied in)."""
    written = [w for w in _written_args(info, args, kwargs) if isinstance(w, OpdTensor)]
    results = [out] if isinstance(out, torch.Tensor) else [
        o for o in (out if isinstance(out, (list, tuple)) else ()) if isinstance(o, torch.Tensor)]
    for w, r in zip(written, results):
        if r is not w:
            if tuple(r.shape) != tuple(w.shape):
                raise OpdUnsupported(f"{info.qualname} would change the shape of an OpdTensor "
                                     f"in place: opd does not support that")
            _copy_into(client, w, r)
    return _written_result(func, info, args, kwargs, out) if any(info.aliased_outputs) else out


def _on_cpu(func, info, client, args, kwargs):
    """cpu_fallback(): the operator on the local CPU, its OpdTensor arguments downloaded; a
    written OpdTensor gets its new value copied into it in the daemon (through views too), its
    other results are uploaded."""
    if info.views:
        raise OpdUnsupported(f"{info.qualname} is a view operator the daemon lacks and PyTorch "
                             f"has no meta kernel for: the CPU fallback cannot make it a view")
    warnings.warn(f"opd has no kernel for {info.qualname}: running it on the local CPU",
                  OpdFallbackWarning, stacklevel=4)
    local_args, local_kwargs = tree_map(_here, (args, kwargs))
    out = func(*local_args, **local_kwargs)
    written = {}
    for (i, name), target in zip(info.written, _written_args(info, args, kwargs)):
        if not isinstance(target, OpdTensor):
            continue
        local = local_args[i] if i < len(local_args) else local_kwargs[name]
        if tuple(local.shape) != tuple(target.shape):
            raise OpdUnsupported(f"{info.qualname} would change the shape of an OpdTensor in "
                                 f"place ({tuple(target.shape)} to {tuple(local.shape)}): opd "
                                 f"does not support that")
        _copy_into(client, target, local)
        written[id(local)] = target
    device = _first_opd(args, kwargs).device

    def back(x):
        if not isinstance(x, torch.Tensor):
            return x
        if id(x) in written:
            return written[id(x)]
        return _from_local(client, x, device)

    return tree_map(back, out)


def _from_local(client, t, device):
    """A result of the CPU fallback as an OpdTensor, uploaded without waiting (the tensor is the
    fallback's own: nothing else changes it while the upload holds its memory)."""
    t = t.detach().contiguous()
    return OpdTensor(client.upload_async(t).outputs[0],
                     torch.empty(t.shape, dtype=t.dtype, device="meta"), client, device)


def _remote_tensor(client, t, device):
    if t.layout != torch.strided:
        raise OpdUnsupported(f"opd holds strided tensors only, not {t.layout} ones")
    if t.is_complex() or t.is_quantized:
        raise OpdUnsupported(f"opd has no {t.dtype} tensors")
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    ref = client.upload_async(t, device=device).outputs[0]
    dev = torch.device(device) if device is not None else torch.device("cpu")
    return OpdTensor(ref, torch.empty(t.shape, dtype=t.dtype, device="meta"), client, dev)


def remote(obj, client, device=None):
    """The daemon's copy of ``obj``: a torch.Tensor becomes an OpdTensor; an nn.Module gets
    every parameter and buffer uploaded once (tensors shared by several modules once) and held
    in the daemon, in place, and is returned; lists, tuples and dicts are converted item by
    item. ``device``: where the daemon keeps them ("cpu", "cuda", "cuda:1").

    A parameter stays a parameter: an OpdTensor that is a leaf and requires grad as the local
    one did, and the module's own bookkeeping runs as in ``module.to(...)`` (its ``_apply``:
    an RNN's flat weights)."""
    done = {}

    def convert(t):
        if isinstance(t, OpdTensor):
            return t
        key = id(t)
        if key not in done:
            r = _remote_tensor(client, t, device)
            if isinstance(t, torch.nn.Parameter):
                r.requires_grad_(t.requires_grad)
                r._is_param = True
            done[key] = (t, r)
        return done[key][1]

    if isinstance(obj, torch.nn.Module):
        for m in obj.modules():
            for table in (m._parameters, m._buffers):
                for name, t in list(table.items()):
                    if t is not None:
                        table[name] = convert(t)
        # the modules' own bookkeeping (RNNBase._apply: _flat_weights), tensors kept as they are
        obj._apply(lambda t: t)
        result = obj
    elif isinstance(obj, torch.Tensor):
        result = convert(obj)
    else:
        result = tree_map(lambda x: convert(x) if isinstance(x, torch.Tensor) else x, obj)
    client.wait_all()  # the uploads are done: the local tensors may change again
    return result
