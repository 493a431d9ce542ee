"""The exceptions of opd: one class per kind of failure, carrying the daemon's code, message
and operator. The extension opd._C makes them through the factory registered here."""
from . import _C

__all__ = [
    "Error", "InvalidArgument", "NotFound", "Unimplemented", "ResourceExhausted",
    "IndexOutOfRange", "Cancelled", "ConnectionLost", "ConnectFailed", "Unavailable",
    "Internal", "Timeout",
]


class Error(RuntimeError):
    """A request that failed. ``code`` is the protocol's ErrorCode name ("INVALID_ARGUMENT"),
    ``err`` the C library's OPD_E* value, ``message`` the daemon's words, ``op`` the operator
    ("aten::add.Tensor") or None."""

    code = "UNKNOWN"

    def __init__(self, message, op=None, err=None):
        self.message = message
        self.op = op
        self.err = err
        text = message if not op or message.startswith(op) else f"{op}: {message}"
        super().__init__(text)


class InvalidArgument(Error, ValueError):
    code = "INVALID_ARGUMENT"


class NotFound(Error, LookupError):
    code = "NOT_FOUND"


class Unimplemented(Error, NotImplementedError):
    """No kernel for the dispatch key (PyTorch's NotImplementedError)."""
    code = "UNIMPLEMENTED"


class ResourceExhausted(Error):
    code = "RESOURCE_EXHAUSTED"


class IndexOutOfRange(Error, IndexError):
    code = "INDEX_OUT_OF_RANGE"


class Cancelled(Error):
    code = "CANCELLED"


class ConnectionLost(Cancelled, ConnectionError):
    """The session was lost: its daemon closed the connection, died, or stopped answering
    (liveness_timeout, call_timeout). Its tensors and graphs are gone with it; this request
    and every later one on the client fail, and nothing reconnects: a new ``opd.connect`` is
    a new session. The message names the daemon."""


class ConnectFailed(Error, ConnectionError):
    """No daemon answered at the address."""
    code = "UNAVAILABLE"


class Unavailable(Error):
    code = "UNAVAILABLE"


class Internal(Error):
    code = "INTERNAL"


class Timeout(Error, TimeoutError):
    code = "DEADLINE_EXCEEDED"


for _cls in [Error] + [globals()[_n] for _n in __all__[1:]]:
    _cls.__module__ = "opd"

_BY_ERR = {
    _C.EINVAL: InvalidArgument, _C.ESCHEMA: InvalidArgument, _C.ENOENT: NotFound,
    _C.ENOTIMPL: Unimplemented, _C.EAMBIGUOUS: Unimplemented, _C.EFALLTHROUGH: Unimplemented,
    _C.ERESOURCE: ResourceExhausted, _C.ENOMEM: ResourceExhausted, _C.EINDEX: IndexOutOfRange,
    _C.ECANCELED: Cancelled, _C.ELOST: ConnectionLost, _C.ESESSION: ConnectionLost,
    _C.ECONNECT: ConnectFailed,
    _C.EUNAVAILABLE: Unavailable, _C.EINTERNAL: Internal, _C.EBUSY: Timeout,
}


def _make_error(err, message, op):
    return _BY_ERR.get(err, Error)(message, op, err)


_C.set_error_factory(_make_error)
