"""opd.Client: a connection to the daemon (the extension's Client) with the operators as
typed calls (``c.ops``), boxed calls by name, uploads from numpy arrays and torch CPU
tensors, and the session's dispatch state as a context manager."""
import contextlib
import json
import urllib.request

from . import _C, _dtypes, _ops, _schema
from . import _errors as opd_errors

DEFAULT_URL = _C.DEFAULT_URL
Tensor = _C.Tensor
Future = _C.Future
Literal = _C.Literal


_MAX_LISTING = 16 << 20


def _listed_schemas(listing):
    """The schema strings of a /v1/ops listing ({"ops": [{"name", "schema"}, ...]}): only
    entries whose name is their schema's own operator name (a listing cannot file a schema
    under another operator's name)."""
    ops = listing.get("ops") if isinstance(listing, dict) else None
    if not isinstance(ops, list):
        raise opd_errors.InvalidArgument("the operator listing has no list 'ops'")
    out = []
    for entry in ops:
        if not isinstance(entry, dict):
            continue
        name, text = entry.get("name"), entry.get("schema")
        if isinstance(name, str) and isinstance(text, str) and \
                text.partition("(")[0].strip() == name:
            out.append(text)
    return out


def _infer_kind(value):
    if isinstance(value, (_C.Tensor, _C.Future, _C.Literal)):
        return "T"
    if value is None:
        return "T?"
    if isinstance(value, bool):
        return "b"
    if isinstance(value, int):
        return "i"
    if isinstance(value, float):
        return "f"
    if isinstance(value, str):
        return "S"
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, (_C.Tensor, _C.Future)) for v in value):
            return "l" if any(v is None for v in value) else "L"
        if value and all(isinstance(v, bool) for v in value):
            return "B"
        if any(isinstance(v, float) for v in value):
            return "F"
        return "I"
    raise TypeError(f"cannot pass a {type(value).__name__} to an operator without a schema")


def _upload_source(data, dtype):
    """A buffer for data: a torch CPU tensor's numpy view (bfloat16 as its int16 bits), a
    sequence through numpy, anything else as it is."""
    if type(data).__module__.startswith("torch"):
        t = data.detach()
        if t.device.type != "cpu":
            raise ValueError(f"upload() takes CPU tensors, not {t.device} ones")
        if not t.is_contiguous():
            t = t.contiguous()
        if str(t.dtype) == "torch.bfloat16":
            import torch
            return t.view(torch.int16).numpy(), _C.BFLOAT16
        return t.numpy(), dtype
    if isinstance(data, (list, tuple, int, float, bool)):
        import numpy
        return numpy.asarray(data), dtype
    return data, dtype


class Client(_C.Client):
    """A connection to an opd daemon: ``opd.connect(url)``. One connection is one session:
    its tensors, its dispatch state. Closing it (or leaving its ``with`` block) releases
    every tensor it holds in the daemon."""

    def __init__(self, url=DEFAULT_URL, *, name="opd-python", timeout=None, max_in_flight=0,
                 placement="first", affinity_key=None, connect_timeout=None,
                 liveness_timeout=None, call_timeout=None, batch_us=None):
        if connect_timeout is None:
            connect_timeout = timeout
        batch = ()
        if batch_us is not None:
            if not 0 <= int(batch_us) < 1 << 32:
                raise ValueError(f"batch_us must be 0 to 2^32 - 1 microseconds, not {batch_us}")
            batch = (int(batch_us),)
        super().__init__(url, name, _milliseconds(connect_timeout, 0), max_in_flight, placement,
                         affinity_key, _milliseconds(liveness_timeout, -1),
                         _milliseconds(call_timeout, 0), *batch)
        self._schemas = dict(_ops.builtin_schemas())
        self._ops = None
        self._by_name = {}
        self._inferred = {}
        self._state = {}

    def __repr__(self):
        return f"<opd.Client {self.url}{' closed' if self.closed else ''}>"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- operators ----

    @property
    def ops(self):
        """The operators: ``c.ops.aten.add.Tensor(a, b, alpha=2)``; each also has
        ``.future(...)`` (an opd.Future, nothing waits) and ``.schema``."""
        if self._ops is None:
            self._ops = _ops.Ops(self, self._schemas)
        return self._ops

    def schema(self, op):
        """The Schema of an operator name with its overload ("aten::add.Tensor"), or None."""
        return self._schemas.get(op)

    def load_ops(self, status_url):
        """Adds the operators the daemon lists at its status endpoint (``/v1/ops``, e.g. the
        ones a plugin defined) to ``ops``; returns how many it has."""
        with urllib.request.urlopen(status_url.rstrip("/") + "/v1/ops", timeout=10) as r:
            body = r.read(_MAX_LISTING + 1)
        if len(body) > _MAX_LISTING:
            raise opd_errors.InvalidArgument(f"the operator listing at {status_url} is larger "
                                             f"than {_MAX_LISTING} bytes")
        try:
            listing = json.loads(body)
        except (ValueError, RecursionError) as e:
            raise opd_errors.InvalidArgument(f"the operator listing at {status_url} is not "
                                             f"JSON: {e}") from None
        self.add_schemas(_listed_schemas(listing))
        return len(self._schemas)

    def add_schemas(self, schemas):
        """Adds schema strings ("ns::op.overload(...) -> ...") as typed calls. An operator the
        client already has keeps its binding; a schema the client cannot parse or pass is
        skipped (the operator stays callable by name). Returns how many were added."""
        added = 0
        for text in schemas:
            try:
                schema = _schema.Schema(text)
            except _schema.SchemaError:
                continue
            if schema.qualname not in self._schemas:
                self._schemas[schema.qualname] = schema
                added += 1
        if added:
            self._ops = None
            self._by_name.clear()
        return added

    def _typed(self, op):
        fn = self._by_name.get(op)
        if fn is None:
            schema = self._schemas.get(op)
            if schema is None:
                return None
            fn = self._by_name[op] = _schema.bind(schema, self)
        return fn

    def _inferred_op(self, op, args):
        kinds = "".join(_infer_kind(a) for a in args)
        key = (op, kinds)
        o = self._inferred.get(key)
        if o is None:
            o = self._inferred[key] = _C.Op(op, kinds, tuple(f"arg{i}" for i in range(len(args))),
                                            -1, _schema.RET_TUPLE)
        return o

    def call(self, op, *args, **kwargs):
        """The boxed call: any operator by name with its overload ("aten::add.Tensor"),
        arguments as in its schema (keywords too, when the client knows the schema; an
        operator it does not know takes positional arguments, converted by their Python
        types). Waits for the result."""
        fn = self._typed(op)
        if fn is not None:
            return fn(*args, **kwargs)
        if kwargs:
            raise TypeError(f"{op}: keyword arguments need the operator's schema (load_ops)")
        return self._call(self._inferred_op(op, args), args)

    def call_async(self, op, *args, **kwargs):
        """The same without waiting: an opd.Future."""
        fn = self._typed(op)
        if fn is not None:
            return fn.future(*args, **kwargs)
        if kwargs:
            raise TypeError(f"{op}: keyword arguments need the operator's schema (load_ops)")
        return self._submit(self._inferred_op(op, args), args)

    # ---- graphs (opd.torch.compile: [Note: compile's two forms] in opd/torch/_graph.py) ----

    def _define_graph(self, fx_graph):
        """Defines a traced torch.fx graph in the daemon: a handle for _run_graph and
        _release_graph ([Note: fx graphs as daemon graphs] in opd/torch/_fx_graph.py);
        NotImplementedError for a graph the daemon's graph API cannot express."""
        from .torch import _fx_graph
        return _fx_graph.define(self, fx_graph)

    def _run_graph(self, graph, inputs):
        """Runs a defined graph on OpdTensors in one request, without waiting: its outputs."""
        from .torch import _fx_graph
        return _fx_graph.run(self, graph, inputs)

    def _release_graph(self, graph):
        from .torch import _fx_graph
        _fx_graph.release(self, graph)

    # ---- tensors ----

    def upload(self, data, dtype=None, shape=None, device=None):
        """A tensor in the daemon made from ``data``: a C-contiguous buffer (a numpy array,
        bytes with dtype and shape), a torch CPU tensor, or a list. The bytes are sent
        straight from the buffer. ``device``: "cpu" (default), "cuda", "cuda:1"."""
        data, dtype = _upload_source(data, dtype)
        return super().upload(data, dtype, shape, device)

    def upload_async(self, data, dtype=None, shape=None, device=None):
        """The same without waiting: an opd.Future whose ``outputs[0]`` can be used in calls
        at once. The buffer is held, and must not change, until the upload completes."""
        data, dtype = _upload_source(data, dtype)
        return super().upload_async(data, dtype, shape, device)

    def numpy(self, tensor):
        """The tensor's data as a new numpy array, read straight into its memory."""
        return tensor.numpy()

    # ---- the session ----

    def set_dispatch_state(self, include=(), exclude=(), remove_include=(), remove_exclude=()):
        """Sets the session's thread-local dispatch sets to the defaults changed by these key
        names (PyTorch's: "AutocastCPU", "AutogradFunctionality"); later calls run with
        them. Each call replaces the previous change."""
        super().set_dispatch_state(list(include), list(exclude), list(remove_include),
                                   list(remove_exclude))
        self._state = {"include": tuple(include), "exclude": tuple(exclude),
                       "remove_include": tuple(remove_include),
                       "remove_exclude": tuple(remove_exclude)}

    @property
    def dispatch_state(self):
        """The change of the dispatch sets in force (as given to set_dispatch_state)."""
        return dict(self._state)

    @contextlib.contextmanager
    def dispatch(self, include=(), exclude=(), remove_include=(), remove_exclude=()):
        """``with c.dispatch(remove_exclude=["AutocastCPU"]): ...``: the calls inside run
        with that dispatch state; the previous one is restored after."""
        before = self._state
        self.set_dispatch_state(include, exclude, remove_include, remove_exclude)
        try:
            yield self
        finally:
            self.set_dispatch_state(**before)


def _milliseconds(seconds, off):
    """Seconds as the C library's milliseconds: None is its default (0), a number that is not
    positive is `off`."""
    if seconds is None:
        return 0
    if seconds <= 0:
        return off
    return max(1, int(seconds * 1000))


def connect(url=DEFAULT_URL, *, placement="first", affinity_key=None, connect_timeout=None,
            liveness_timeout=None, **options):
    """Connects to a daemon and says hello: a Client, also a context manager. ``url`` names
    one daemon or several: "tcp://HOST:PORT" (every address of the name), "tcp://A:P,B:P",
    "srv://NAME" (DNS SRV), "unix:///path". ``placement`` chooses among several: "first",
    "random", "least_loaded" (the less loaded of two) or "affinity" (by ``affinity_key``:
    sessions of one key meet on one daemon, where its graphs are cached). A daemon that
    refuses, is silent or drains is passed over within ``connect_timeout`` seconds (default
    10). ``liveness_timeout`` (seconds, default 30; 0: off) bounds how long a dead daemon
    host goes unnoticed; ``call_timeout`` (seconds, default none) how long a call waits for
    its reply before the session is ended. After the hello a lost session is final: every
    request raises opd.ConnectionLost, nothing reconnects. ``c.endpoint`` names the daemon
    the session landed on. ``batch_us``: how long a request may be held to be written
    together with the next ones (500 by default; 0 writes each at once; every wait writes
    them, and so does ``flush()``). Other options: name, max_in_flight."""
    return Client(url, placement=placement, affinity_key=affinity_key,
                  connect_timeout=connect_timeout, liveness_timeout=liveness_timeout, **options)


dtype_code = _dtypes.code
