#!/usr/bin/env python3
"""gen_ops.py: generates the client's typed calls from the daemon's operator list.

    gen_ops.py SCHEMAS.def OUT_HEADER OUT_SOURCE [HEADER_DIR...]

Reads kernels/aten_schemas.def (X("schema") lines), writes opd/client_ops.h (declarations)
and client_ops.c (definitions marshalling typed arguments into boxed values for
opd_client_call_async / the synchronous typed path). The naming and argument rules are
[Note: Typed calls] in client/include/opd/client.h. HEADER_DIRs hold the other opd
libraries' public headers: a generated name one of them already declares is an error unless
RENAMED gives the operator another name, so the client API never changes silently.
"""
import glob
import os
import re
import sys

# Operators whose generated name another opd library already uses.
RENAMED = {"aten::log": "opd_log_op"}
# indexing, joining, shapes, sorting (scatter.reduce is opd_scatter_reduce, opd_stack a type)
RENAMED.update({"aten::scatter_reduce.two": "opd_scatter_reduce_two", "aten::stack": "opd_stack_op"})

C_KEYWORDS = set(
    "auto break case char const continue default do double else enum extern float for goto if "
    "inline int long register restrict return short signed sizeof static struct switch typedef "
    "union unsigned void volatile while bool true false".split())
# Parameters of the generated functions themselves.
OWN_PARAMS = {"c", "result", "cb", "user", "out"}

# c10's named constants in defaults.
NAMED_INTS = {"Mean": 1, "contiguous_format": 0, "strided": 0, "long": 4, "float": 6,
              "complex": 9}

INT_KINDS = {"int", "SymInt", "Layout", "MemoryFormat"}


class GenError(Exception):
    pass


def split_top(text, sep=","):
    """Splits at `sep` outside brackets, parentheses and quotes."""
    parts, depth, quote, cur = [], 0, None, ""
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur += ch
            if ch == "\\" and i + 1 < len(text):
                cur += text[i + 1]
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            cur += ch
        elif ch in "([":
            depth += 1
            cur += ch
        elif ch in ")]":
            depth -= 1
            cur += ch
        elif ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


class Type:
    def __init__(self, text):
        t = text.replace(" ", "")
        m = re.fullmatch(r"(\w+)(\([^)]*\))?(\?)?(\[(\d*)\])?(\?)?", t)
        if not m:
            raise GenError(f"cannot parse type '{text}'")
        self.base = m.group(1)
        self.is_list = m.group(4) is not None
        self.fixed = int(m.group(5)) if self.is_list and m.group(5) else 0
        if self.is_list:
            self.elem_optional = m.group(3) is not None
            self.optional = m.group(6) is not None
        else:
            self.elem_optional = False
            self.optional = m.group(3) is not None or m.group(6) is not None
        if self.base not in INT_KINDS | {"Tensor", "float", "bool", "str", "Scalar", "ScalarType",
                                          "Device"}:
            raise GenError(f"unsupported type '{text}'")
        if self.is_list and self.base not in INT_KINDS | {"Tensor", "float", "bool"}:
            raise GenError(f"unsupported list type '{text}'")
        if self.elem_optional and self.base != "Tensor":
            raise GenError(f"only Tensor?[] lists may hold None: '{text}'")


class Arg:
    def __init__(self, text, kwarg_only):
        self.kwarg_only = kwarg_only
        # a type and a name hold no '=', so the first one starts the default
        decl, eq, default = text.partition("=")
        decl = decl.strip()
        self.default = default.strip() if eq else None
        tname = decl.rsplit(None, 1)
        if len(tname) != 2:
            raise GenError(f"cannot parse argument '{text}'")
        self.type = Type(tname[0])
        self.name = tname[1]
        cname = self.name
        if cname in C_KEYWORDS or cname in OWN_PARAMS or cname.startswith("opd__"):
            cname += "_"
        self.cname = cname

    @property
    def by_pointer(self):
        """Whether the C parameter is passed by pointer with NULL meaning default/None."""
        return self.default is not None or self.type.optional


class Schema:
    def __init__(self, text):
        self.text = text
        m = re.fullmatch(r"\s*(\w+)::(\w+)(?:\.(\w+))?\((.*)\)\s*->\s*(.*)", text, re.S)
        if not m:
            raise GenError(f"cannot parse schema '{text}'")
        self.ns, self.name, self.overload = m.group(1), m.group(2), m.group(3) or ""
        self.qualified = f"{self.ns}::{self.name}" + (f".{self.overload}" if self.overload else "")
        self.args = []
        kwarg_only = False
        for part in split_top(m.group(4)):
            if part == "*":
                kwarg_only = True
                continue
            self.args.append(Arg(part, kwarg_only))
        rets = m.group(5).strip()
        if rets.startswith("("):
            rets = rets[1:-1]
        self.returns = [r for r in split_top(rets) if r]
        # only operators whose results are Tensors have typed calls; the others (a Tensor[]
        # result: split.Tensor) are called boxed
        self.typed = all(_plain_tensor(Type(r.split()[0])) for r in self.returns)


def _plain_tensor(t):
    return t.base == "Tensor" and not t.is_list and not t.optional


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def c_double(text):
    low = text.lower()
    if low in ("inf", "+inf"):
        return "INFINITY"
    if low == "-inf":
        return "-INFINITY"
    if low == "nan":
        return "NAN"
    v = float(text)
    r = repr(v)
    return r if any(ch in r for ch in ".e") else r + ".0"


def parse_int(text):
    text = text.strip()
    if text in NAMED_INTS:
        return NAMED_INTS[text]
    return int(text)


def default_value(schema, arg, statics):
    """A C expression (an opd_client_value) for arg's default."""
    d, t = arg.default, arg.type
    if d == "None":
        if not t.optional:
            raise GenError(f"{schema.qualified}: None default of non-optional '{arg.name}'")
        return "opd_cv_none()"
    if t.is_list:
        if d.startswith("["):
            items = [x for x in split_top(d[1:-1]) if x]
        else:
            items = [d] * (t.fixed or 1)
        if t.base in INT_KINDS:
            vals, ctype, ctor = [str(parse_int(x)) + "LL" for x in items], "int64_t", "opd_cv_ints"
        elif t.base == "float":
            vals, ctype, ctor = [c_double(x) for x in items], "double", "opd_cv_doubles"
        elif t.base == "bool":
            vals, ctype, ctor = [("true" if x == "True" else "false") for x in items], "bool", \
                "opd_cv_bools"
        else:
            raise GenError(f"{schema.qualified}: unsupported list default '{d}'")
        if not vals:
            return f"{ctor}(NULL, 0)"
        # per operator: two operators' defaults must not share a name in the one file
        op = "".join(ch if ch.isalnum() else "_" for ch in schema.qualified)
        sym = f"default_{op}_{len(statics)}"
        statics.append(f"static const {ctype} {sym}[] = {{{', '.join(vals)}}};")
        return f"{ctor}({sym}, {len(vals)})"
    b = t.base
    if b == "bool":
        return f"opd_cv_bool({'true' if d == 'True' else 'false'})"
    if b in INT_KINDS:
        return f"opd_cv_int({parse_int(d)}LL)"
    if b == "ScalarType":
        return f"opd_cv_dtype({parse_int(d)})"
    if b == "float":
        return f"opd_cv_double({c_double(d)})"
    if b == "str":
        if len(d) < 2 or d[0] not in "\"'" or d[-1] != d[0]:
            raise GenError(f"{schema.qualified}: bad string default {d}")
        return f"opd_cv_str({c_string(d[1:-1])})"
    if b == "Scalar":
        if d in ("True", "False"):
            return f"opd_cv_bool({'true' if d == 'True' else 'false'})"
        if re.fullmatch(r"-?\d+", d):
            return f"opd_cv_int({int(d)}LL)"
        return f"opd_cv_double({c_double(d)})"
    raise GenError(f"{schema.qualified}: unsupported default '{d}' for '{arg.name}'")


SCALAR_C = {"float": "double", "bool": "bool", "ScalarType": "int", "Scalar": "opd_client_scalar",
            "Device": "opd_client_device", "str": "const char *"}
LIST_C = {"float": "double", "bool": "bool"}


def c_params(arg):
    """The C parameter declarations of one argument."""
    t, n = arg.type, arg.cname
    if t.is_list:
        elem = "opd_client_tensor" if t.base == "Tensor" else LIST_C.get(t.base, "int64_t")
        return [f"const {elem} *{n}", f"size_t {n}_len"]
    if t.base == "Tensor":
        return [f"opd_client_tensor {n}"]
    if t.base == "str":
        return [f"const char *{n}"]
    ctype = "int64_t" if t.base in INT_KINDS else SCALAR_C[t.base]
    return [f"const {ctype} *{n}" if arg.by_pointer else f"{ctype} {n}"]


def value_expr(arg, src):
    """The opd_client_value of an explicit argument whose C value is `src`."""
    t = arg.type
    if t.is_list:
        ctor = {"Tensor": "opd_cv_opt_tensors" if t.elem_optional else "opd_cv_tensors",
                "float": "opd_cv_doubles", "bool": "opd_cv_bools"}.get(t.base, "opd_cv_ints")
        return f"{ctor}({arg.cname}, {arg.cname}_len)"
    if t.base == "Device":
        return f"opd_cv_device(({src}).type, ({src}).index)"
    ctor = {"Tensor": "opd_cv_tensor", "float": "opd_cv_double", "bool": "opd_cv_bool",
            "ScalarType": "opd_cv_dtype", "Scalar": "opd_cv_scalar", "str": "opd_cv_str"}.get(
                t.base, "opd_cv_int")
    return f"{ctor}({src})"


def arg_lines(schema, i, arg, statics):
    """The statements that set opd__a[i] (and opd__n when the argument is explicit)."""
    t, n, q = arg.type, arg.cname, c_string(schema.qualified)
    explicit = f"opd__a[{i}] = {value_expr(arg, n)};"
    given = f"opd__n = {i + 1};"
    no_default = arg.default is None
    fallback = default_value(schema, arg, statics) if not no_default else "opd_cv_none()"
    lines = []
    if t.is_list:
        if arg.by_pointer:
            # NULL: the default (or None); a NULL list with a length is an error in args_build
            lines.append(f"if ({n} || {n}_len) {{ {explicit} {given} }}")
            lines.append(f"else {{ opd__a[{i}] = {fallback};{' ' + given if no_default else ''} }}")
        else:
            lines += [explicit, given]
    elif t.base == "Tensor":
        if t.optional:
            lines.append(f"if ({n}) {{ {explicit} {given} }}")
            lines.append(f"else {{ opd__a[{i}] = {fallback};{' ' + given if no_default else ''} }}")
        else:
            lines.append(f"if (!{n}) return opd__client_bad_arg({q}, \"{arg.name}\", "
                         f"\"is a required Tensor (handle 0)\");")
            lines += [explicit, given]
    elif t.base == "str":
        if arg.by_pointer:
            lines.append(f"if ({n}) {{ {explicit} {given} }}")
            lines.append(f"else {{ opd__a[{i}] = {fallback};{' ' + given if no_default else ''} }}")
        else:
            lines.append(f"if (!{n}) return opd__client_bad_arg({q}, \"{arg.name}\", "
                         f"\"is a required string (NULL)\");")
            lines += [explicit, given]
    else:
        src = f"*{n}" if arg.by_pointer else n
        check = []
        if t.base == "Scalar":
            check = [f"if (!scalar_ok({'' if arg.by_pointer else '&'}{n})) return "
                     f"opd__client_bad_arg({q}, \"{arg.name}\", \"is not an int, double or "
                     f"bool Scalar\");"]
        if arg.by_pointer:
            lines.append(f"if ({n}) {{")
            lines += ["  " + x for x in check]
            lines += [f"  opd__a[{i}] = {value_expr(arg, src)};", f"  {given}", "}"]
            lines.append(f"else {{ opd__a[{i}] = {fallback};{' ' + given if no_default else ''} }}")
        else:
            lines += check + [f"opd__a[{i}] = {value_expr(arg, src)};", given]
    return lines


def generated_names(schemas):
    """opd_<name>[_<overload>] per the naming rule; RENAMED wins."""
    by_name = {}
    for s in schemas:
        by_name.setdefault((s.ns, s.name), []).append(s)
    names = {}
    for (ns, name), group in by_name.items():
        overloads = {s.overload for s in group}
        main = "" if "" in overloads else "Tensor" if "Tensor" in overloads else (
            group[0].overload if len(group) == 1 else None)
        for s in group:
            fn = f"opd_{name}" if s.overload == main else f"opd_{name}_{s.overload.lower()}"
            names[s.qualified] = RENAMED.get(s.qualified, fn)
    seen = {}
    for q, fn in names.items():
        if fn in seen:
            raise GenError(f"{q} and {seen[fn]} both map to {fn}: extend RENAMED")
        seen[fn] = q
    return names


def taken_names(header_dirs):
    taken = set()
    for d in header_dirs:
        for path in glob.glob(os.path.join(d, "**", "*.h"), recursive=True):
            if os.path.basename(path) in ("client.h", "client_ops.h"):
                continue
            with open(path, encoding="utf-8") as f:
                taken |= set(re.findall(r"\b(opd_\w+)\s*\(", f.read()))
    return taken


def read_schemas(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out = []
    for m in re.finditer(r'^X\((".*")\)\s*$', text, re.M):
        lit = m.group(1)[1:-1]
        out.append(re.sub(r'\\(.)', r'\1', lit))
    if not out:
        raise GenError(f"{path}: no X(\"schema\") lines")
    return out


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    defs, out_h, out_c, header_dirs = argv[1], argv[2], argv[3], argv[4:]
    schemas = [s for s in map(Schema, read_schemas(defs)) if s.typed]
    names = generated_names(schemas)
    taken = taken_names(header_dirs)
    for s in schemas:
        for fn in (names[s.qualified], names[s.qualified] + "_async"):
            if fn in taken:
                raise GenError(f"{fn} (for {s.qualified}) is already declared by another opd "
                               "header: add the operator to RENAMED in client/gen_ops.py")

    h = ["/* opd/client_ops.h: GENERATED by client/gen_ops.py from kernels/aten_schemas.def; do not",
         " * edit. The typed calls of [Note: Typed calls] in opd/client.h, one pair per operator. */",
         "#ifndef OPD_CLIENT_OPS_H", "#define OPD_CLIENT_OPS_H", "", '#include "opd/client.h"', "",
         "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
         f"#define OPD_CLIENT_NUM_TYPED_OPS {len(schemas)}", ""]
    c = ["/* client_ops.c: GENERATED by client/gen_ops.py from kernels/aten_schemas.def; do not",
         " * edit. Typed calls: typed arguments to boxed values, defaults from the schemas. */",
         "#include <math.h>", "#include <stddef.h>", "", '#include "client_internal.h"', "",
         "static bool scalar_ok(const opd_client_scalar *s) {",
         "  return s->kind == OPD_CV_INT || s->kind == OPD_CV_DOUBLE || s->kind == OPD_CV_BOOL;",
         "}", ""]
    need_scalar = False
    for s in schemas:
        fn = names[s.qualified]
        params = [p for a in s.args for p in c_params(a)]
        nret = len(s.returns)
        res = "opd_client_tensor *result" if nret == 1 else f"opd_client_tensor result[{nret}]"
        sync_sig = f"int {fn}(" + ", ".join(["opd_client *c"] + params + [res]) + ")"
        async_sig = f"int {fn}_async(" + ", ".join(
            ["opd_client *c"] + params + ["opd_future_cb cb", "void *user", "opd_future **out"]) + ")"
        h.append(f"/* {s.text} */")
        h.append(sync_sig + ";")
        h.append(async_sig + ";")
        statics = []
        body = []
        for i, a in enumerate(s.args):
            body += arg_lines(s, i, a, statics)
            need_scalar |= a.type.base == "Scalar"
        nargs = max(len(s.args), 1)
        builder = f"args_{fn[4:]}"
        cparams = ", ".join(
            [f"opd_client_value opd__a[{nargs}]", "size_t *opd__np"] + params)
        c += statics
        c.append(f"static int {builder}({cparams}) {{")
        c.append("  size_t opd__n = 0;")
        c += ["  " + l for l in body]
        c.append("  *opd__np = opd__n;")
        c.append("  return 0;")
        c.append("}")
        call_args = ", ".join(["opd__a", "&opd__n"] + [
            x for a in s.args for x in ([a.cname, a.cname + "_len"] if a.type.is_list else [a.cname])])
        q = c_string(s.qualified)
        c.append(sync_sig + " {")
        c.append(f"  opd_client_value opd__a[{nargs}];")
        c.append("  size_t opd__n = 0;")
        c.append(f"  int rc = {builder}({call_args});")
        c.append(f"  return rc ? rc : opd__client_call_typed(c, {q}, opd__a, opd__n, result, {nret});")
        c.append("}")
        c.append(async_sig + " {")
        c.append("  if (out) *out = NULL;")
        c.append(f"  opd_client_value opd__a[{nargs}];")
        c.append("  size_t opd__n = 0;")
        c.append(f"  int rc = {builder}({call_args});")
        c.append(f"  return rc ? rc : opd_client_call_async(c, {q}, opd__a, opd__n, cb, user, out);")
        c.append("}")
        c.append("")
    if not need_scalar:
        c = [l for l in c if "scalar_ok" not in l]
    h += ["", "#ifdef __cplusplus", "}", "#endif", "#endif", ""]
    os.makedirs(os.path.dirname(out_h) or ".", exist_ok=True)
    os.makedirs(os.path.dirname(out_c) or ".", exist_ok=True)
    for path, lines in ((out_h, h), (out_c, c)):
        text = "\n".join(lines) + ("\n" if lines[-1] else "")
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except GenError as e:
        print(f"gen_ops.py: {e}", file=sys.stderr)
        sys.exit(1)
