"""ATen schemas as the Python client calls them: the parse of a schema string
("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor") into its
arguments, and the typed function generated from it, with the schema's positional and
keyword-only arguments and defaults, so that Python binds the arguments and
opd._C converts them by the kinds the schema gives (see docs/PYTHON.md).

[Note: Generated source from checked names only]
Schemas also come from a daemon's status endpoint (Client.load_ops), which is as hostile as
any other input. The typed function is generated as Python source, so every name that goes
into that source is checked here first: the namespace, operator, overload and argument names
must be plain ASCII identifiers (``[A-Za-z_][A-Za-z0-9_]*``, keywords renamed with a trailing
``_``), argument names unique, and none of the generator's own names (``_call``, ``_op``,
anything ending in ``__d``). Defaults never enter
the source: they are parsed with ast.literal_eval and passed as values. The function's own
name is fixed; its ``__name__`` is set afterwards. A schema that fails a check is a
SchemaError, and its operator is not bound."""
import ast
import keyword
import re

from . import _C

# kind characters of opd._C.Op, by schema base type
_KINDS = {"Tensor": "T", "int": "i", "SymInt": "i", "Layout": "i", "MemoryFormat": "i",
          "float": "f", "bool": "b", "Scalar": "s", "ScalarType": "y", "Device": "v",
          "str": "S", "Generator": "g"}
_LIST_KINDS = {"T": "L", "i": "I", "f": "F", "b": "B"}
# c10's named constants in defaults
_NAMED = {"contiguous_format": 0, "preserve_format": 1, "strided": 0, "Mean": 1, "Sum": 2,
          "long": 4, "float": 6}
RET_SINGLE, RET_TUPLE, RET_LIST = 0, 1, 2

_TYPE = re.compile(r"(\w+)(?:\([^)]*\))?(\?)?(\[(\d*)\])?(\?)?$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MAX_SCHEMA = 4096


class SchemaError(ValueError):
    pass


def _checked_name(name, what):
    """name when it is a plain ASCII identifier that cannot clash with the generated code's
    own names ([Note: Generated source from checked names only])."""
    if not isinstance(name, str) or not _IDENT.match(name) or name.endswith("__d"):
        raise SchemaError(f"invalid {what} name {name!r}")
    return name


def _split(text):
    """Splits at commas outside brackets and quotes."""
    parts, depth, start, quote = [], 0, 0, None
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    rest = text[start:].strip()
    return parts + [rest] if rest else parts


def _default(text):
    if text in _NAMED:
        return _NAMED[text]
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as e:
        raise SchemaError(f"invalid default {text!r}") from e
    if not isinstance(value, (bool, int, float, str, list, tuple, type(None))):
        raise SchemaError(f"invalid default {text!r}")
    return tuple(value) if isinstance(value, list) else value


class Argument:
    __slots__ = ("name", "pyname", "type", "kind", "optional", "has_default", "default",
                 "kwarg_only")

    def __init__(self, decl, kwarg_only):
        decl, eq, default = decl.partition("=")
        type_text, _, name = decl.strip().rpartition(" ")
        m = _TYPE.match(type_text.replace(" ", ""))
        if not m or m.group(1) not in _KINDS:
            raise SchemaError(f"unsupported argument type '{type_text}'")
        base, elem_opt, is_list, list_opt = m.group(1), m.group(2), m.group(3), m.group(5)
        kind = _KINDS[base]
        if is_list:
            if kind not in _LIST_KINDS:
                raise SchemaError(f"unsupported list type '{type_text}'")
            kind = "l" if kind == "T" and elem_opt else _LIST_KINDS[kind]
            optional = bool(list_opt)
        else:
            optional = bool(elem_opt or list_opt)
        self.name = _checked_name(name, "argument")
        self.pyname = name + "_" if keyword.iskeyword(name) else name
        self.type = type_text
        self.kind = kind
        self.optional = optional or kind == "g"
        self.has_default = bool(eq)
        self.default = _default(default.strip()) if eq else None
        self.kwarg_only = kwarg_only


class Schema:
    """One operator overload: ``qualname`` "aten::add.Tensor", ``namespace`` "aten",
    ``name`` "add", ``overload`` "Tensor" ("default" when it has none)."""

    def __init__(self, text):
        if not isinstance(text, str) or len(text) > _MAX_SCHEMA:
            raise SchemaError("a schema is a string of at most 4096 characters")
        self.text = text
        head, arrow, returns = text.rpartition(") -> ")
        if not arrow:
            raise SchemaError(f"no returns in '{text}'")
        qualname, paren, args = head.partition("(")
        self.qualname = qualname.strip()
        ns, sep, rest = self.qualname.partition("::")
        if not sep or not paren:
            raise SchemaError(f"cannot parse '{text}'")
        self.namespace = _checked_name(ns, "namespace")
        name, _, overload = rest.partition(".")
        self.name = _checked_name(name, "operator")
        self.overload = _checked_name(overload, "overload") if overload else "default"
        self.arguments = []
        kwarg_only = False
        for decl in _split(args):
            if decl == "*":
                kwarg_only = True
            else:
                self.arguments.append(Argument(decl, kwarg_only))
        pynames = [a.pyname for a in self.arguments]
        if len(set(pynames)) != len(pynames) or set(pynames) & _GENERATED_NAMES:
            raise SchemaError(f"repeated or reserved argument names in '{self.qualname}'")
        self.nouts, self.ret_form = _returns(returns.strip())
        self.op = _C.Op(self.qualname, "".join(a.kind + ("?" if a.optional else "")
                                               for a in self.arguments),
                        tuple(a.name for a in self.arguments), self.nouts, self.ret_form)

    def __repr__(self):
        return f"<opd schema {self.text}>"


def _returns(text):
    """(tensors returned or -1, the form of the value)."""
    if text.startswith("("):
        items = [r for r in _split(text[1:-1]) if r]
        if all(r.split()[0].startswith("Tensor") and not r.split()[0].endswith("[]")
               for r in items):
            return len(items), RET_TUPLE
        return -1, RET_TUPLE
    base = text.split()[0]
    if base.endswith("[]"):
        return -1, RET_LIST
    return (1 if base.startswith("Tensor") else -1), RET_SINGLE


_FACTORIES = {}
# the names the generated source defines itself: no argument may take one
_GENERATED_NAMES = {"_make", "_call", "_submit", "_op", "call", "future"}


def _factory(schema):
    """A function that makes the schema's typed call for a client: source generated once."""
    key = schema.text
    if key in _FACTORIES:
        return _FACTORIES[key]
    params = []
    positional = [a for a in schema.arguments if not a.kwarg_only]
    # Python needs defaults last among the positional parameters: an ATen schema with a
    # defaulted positional argument before one without makes the earlier one required.
    last_required = max((i for i, a in enumerate(positional) if not a.has_default), default=-1)
    for i, a in enumerate(positional):
        if a.has_default and i > last_required:
            params.append(f"{a.pyname}={a.pyname}__d")
        else:
            params.append(a.pyname)
    kwonly = [a for a in schema.arguments if a.kwarg_only]
    if kwonly:
        params.append("*")
        params += [f"{a.pyname}={a.pyname}__d" if a.has_default else a.pyname for a in kwonly]
    names = ", ".join(a.pyname for a in schema.arguments)
    defaults = ", ".join(f"{a.pyname}__d" for a in schema.arguments if a.has_default)
    src = (f"def _make(_call, _submit, _op, {defaults}):\n"
           f"    def call({', '.join(params)}):\n"
           f"        return _call(_op, ({names}{',' if names else ''}))\n"
           f"    def future({', '.join(params)}):\n"
           f"        return _submit(_op, ({names}{',' if names else ''}))\n"
           f"    return call, future\n")
    scope = {}
    exec(compile(src, f"<opd schema {schema.qualname}>", "exec"), scope)
    make = scope["_make"]
    default_values = [a.default for a in schema.arguments if a.has_default]

    def bind(client):
        call, future = make(client._call, client._submit, schema.op, *default_values)
        call.__name__ = call.__qualname__ = schema.qualname
        call.__doc__ = (f"{schema.text}\n\nCalls the operator in the daemon and waits for its "
                        f"result; .future(...) returns an opd.Future without waiting.")
        call.future = future
        call.schema = schema
        call.op = schema.op
        return call

    _FACTORIES[key] = bind
    return bind


def bind(schema, client):
    """The typed call of schema on client: a function with the schema's signature."""
    return _factory(schema)(client)


def read_def(text):
    """The schema strings of an X("...") list (kernels/aten_schemas.def), X_UNTYPED lines
    included: the C client has no typed call for them, but Python calls every operator boxed."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        for macro in ('X("', 'X_UNTYPED("'):
            if line.startswith(macro):
                out.append(ast.literal_eval(line[len(macro) - 1:line.rindex(")")]))
    return out
