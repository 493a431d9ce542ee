"""opd: the Python client of the opd operator-serving daemon.

    import opd, numpy as np
    with opd.connect("tcp://127.0.0.1:7470") as c:
        a = c.upload(np.ones((2, 3), np.float32))
        s = c.ops.aten.add.Tensor(a, a, alpha=2)
        print(s.numpy())

``opd.torch`` runs torch code in the daemon (``opd.torch.remote``, ``opd.torch.compile``).
Everything goes through the C client library (libopd_client): see client/python/README.md
and docs/PYTHON.md.
"""
from . import _C, _dtypes
from ._client import DEFAULT_URL, Client, Future, Literal, Tensor, connect, dtype_code
from ._errors import (Cancelled, ConnectFailed, ConnectionLost, Error, IndexOutOfRange, Internal,
                      InvalidArgument, NotFound, ResourceExhausted, Timeout, Unavailable,
                      Unimplemented)
from ._schema import Schema

__all__ = [
    "connect", "Client", "Tensor", "Future", "Literal", "Schema", "DEFAULT_URL", "dtype_code",
    "Error", "InvalidArgument", "NotFound", "Unimplemented", "ResourceExhausted",
    "IndexOutOfRange", "Cancelled", "ConnectionLost", "ConnectFailed", "Unavailable", "Internal",
    "Timeout",
]
