"""``client.ops``: the daemon's operators as PyTorch names them,
``c.ops.aten.add.Tensor(a, b, alpha=2)``, from the operator list the daemon was built with
(aten_schemas.def, shipped in the package) and any schemas the client loaded from the
daemon's status endpoint (Client.load_ops). Attribute lookups are cached on the objects, so
a call costs one Python function call plus the extension's."""
import os

from . import _schema

_BUILTIN = None


def builtin_schemas():
    """The schemas of the operator list the package was built with: {qualname: Schema}."""
    global _BUILTIN
    if _BUILTIN is None:
        path = os.path.join(os.path.dirname(__file__), "aten_schemas.def")
        with open(path, encoding="utf-8") as f:
            _BUILTIN = {s.qualname: s for s in map(_schema.Schema, _schema.read_def(f.read()))}
    return _BUILTIN


class OverloadPacket:
    """``c.ops.aten.add``: its overloads as attributes (``.Tensor``, ``.Scalar``, ``.default``
    for the one without a name); calling it calls the first overload whose argument types
    match."""

    def __init__(self, client, qualname, schemas):
        self._client = client
        self._qualname = qualname
        self._schemas = schemas  # overload -> Schema

    def __getattr__(self, overload):
        schema = self._schemas.get(overload)
        if schema is None:
            raise AttributeError(f"{self._qualname} has no overload '{overload}' "
                                 f"(it has {', '.join(sorted(self._schemas))})")
        fn = _schema.bind(schema, self._client)
        setattr(self, overload, fn)
        return fn

    def overloads(self):
        return sorted(self._schemas)

    def _resolve(self, future, args, kwargs):
        errors = []
        for overload in self._schemas:
            fn = getattr(self, overload)
            try:
                return (fn.future if future else fn)(*args, **kwargs)
            except TypeError as e:  # raised before anything is sent
                errors.append(f"{overload}: {e}")
        raise TypeError(f"no overload of {self._qualname} takes these arguments:\n  "
                        + "\n  ".join(errors))

    def __call__(self, *args, **kwargs):
        return self._resolve(False, args, kwargs)

    def future(self, *args, **kwargs):
        """The first matching overload's call without waiting: an opd.Future."""
        return self._resolve(True, args, kwargs)

    def __repr__(self):
        return f"<opd operator {self._qualname} ({', '.join(self.overloads())})>"


class Namespace:
    """``c.ops.aten``: the operators of one namespace."""

    def __init__(self, client, name, table):
        self._client = client
        self._name = name
        self._table = table  # name -> {overload: Schema}

    def __getattr__(self, name):
        if name not in self._table:
            raise AttributeError(f"the daemon has no operator {self._name}::{name}")
        packet = OverloadPacket(self._client, f"{self._name}::{name}", self._table[name])
        setattr(self, name, packet)
        return packet

    def __dir__(self):
        return sorted(self._table)


class Ops:
    """``c.ops``: namespaces of operators."""

    def __init__(self, client, schemas):
        self._client = client
        self._tables = {}
        for s in schemas.values():
            self._tables.setdefault(s.namespace, {}).setdefault(s.name, {})[s.overload] = s

    def __getattr__(self, ns):
        if ns.startswith("__") or ns not in self._tables:
            raise AttributeError(f"the daemon has no operator namespace '{ns}'")
        space = Namespace(self._client, ns, self._tables[ns])
        setattr(self, ns, space)
        return space

    def __dir__(self):
        return sorted(self._tables)
