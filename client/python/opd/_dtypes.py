"""dtypes: opd's codes are c10's ScalarType values; names, numpy and torch dtypes map to them."""
from . import _C

#: name -> opd dtype code (c10's ScalarType value)
CODES = {
    "uint8": _C.UINT8, "int8": _C.INT8, "int16": _C.INT16, "int32": _C.INT32,
    "int64": _C.INT64, "float16": _C.FLOAT16, "float32": _C.FLOAT32, "float64": _C.FLOAT64,
    "bool": _C.BOOL, "bfloat16": _C.BFLOAT16,
}
NAMES = {code: name for name, code in CODES.items()}
_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "long": "int64",
            "int": "int32", "short": "int16", "byte": "uint8", "char": "int8"}


def code(dtype):
    """The opd dtype code of a name ("float32"), a numpy or torch dtype, or a code."""
    if isinstance(dtype, int):
        return dtype
    if isinstance(dtype, str):
        name = dtype
    else:
        # torch.float32 prints "torch.float32"; numpy dtypes and types have .name / __name__
        text = str(dtype)
        if text.startswith("torch."):
            name = text[6:]
        else:
            try:
                import numpy
                name = numpy.dtype(dtype).name
            except (ImportError, TypeError):
                name = text
    name = _ALIASES.get(name, name)
    if name not in CODES:
        raise TypeError(f"opd has no dtype {dtype!r} (it has {', '.join(CODES)})")
    return CODES[name]


_C.set_dtype_converter(code)
