"""Builds the Python package opd: the extension opd._C against the opd C client library, and
the package with the daemon's operator list (aten_schemas.def).

    pip install --no-build-isolation ./client/python       # offline, Debian's setuptools

The C client library is taken, in this order, from (docs/PYTHON.md):
  1. $OPD_BUILD_DIR, a CMake build tree of this repository (libopd_client.a, libopd_proto.a,
     the generated headers; the sources it was configured from, by its CMakeCache.txt);
  2. the in-tree build trees build-release/ and build/ next to client/;
  3. an installed library (cmake --install), found with pkg-config opd-client; its operator
     list is PREFIX/share/opd/aten_schemas.def.
The operator list comes from the source tree (kernels/aten_schemas.def) when there is one.
"""
import os
import shlex
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def _build_tree():
    candidates = [os.environ.get("OPD_BUILD_DIR")] + [
        os.path.join(REPO, d) for d in ("build-release", "build")]
    for d in candidates:
        if d and os.path.exists(os.path.join(d, "client", "libopd_client.a")):
            return os.path.abspath(d)
    return None


def _source_of(tree):
    """The source directory a CMake build tree was configured from."""
    with open(os.path.join(tree, "CMakeCache.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("opd_SOURCE_DIR:"):
                return line.split("=", 1)[1].strip()
    return REPO


def _pkg_config(*args):
    return subprocess.run(["pkg-config", *args, "opd-client"], check=True, capture_output=True,
                          text=True).stdout.strip()


def _library():
    """(include dirs, extra objects, libraries, link args, operator list path)."""
    tree = _build_tree()
    schemas = os.path.join(REPO, "kernels", "aten_schemas.def")
    if tree:
        src = _source_of(tree)
        schemas = os.path.join(src, "kernels", "aten_schemas.def")
        return ([os.path.join(src, "client", "include"), os.path.join(tree, "client", "gen"),
                 os.path.join(src, "dispatcher", "include")],
                [os.path.join(tree, "client", "libopd_client.a"),
                 os.path.join(tree, "proto", "libopd_proto.a")],
                ["protobuf-c", "resolv", "pthread"], [], schemas)
    try:
        cflags = shlex.split(_pkg_config("--cflags"))
        libs = shlex.split(_pkg_config("--libs", "--static"))
        prefix = _pkg_config("--variable=prefix")
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit("setup.py: no opd C client library: build the tree (README.md), set "
                         "OPD_BUILD_DIR, or install it (pkg-config opd-client)") from e
    if not os.path.exists(schemas):
        schemas = os.path.join(prefix, "share", "opd", "aten_schemas.def")
    return ([f[2:] for f in cflags if f.startswith("-I")], [], [], libs, schemas)


INCLUDES, OBJECTS, LIBRARIES, LINK_ARGS, SCHEMAS = _library()


class BuildPy(build_py):
    """Copies the operator list into the package."""

    def run(self):
        super().run()
        if not os.path.exists(SCHEMAS):
            raise SystemExit(f"setup.py: no operator list at {SCHEMAS}")
        shutil.copy(SCHEMAS, os.path.join(self.build_lib, "opd", "aten_schemas.def"))


setup(
    name="opd",
    version="0.1.0",
    description="Python client of the opd operator-serving daemon, and its PyTorch bridge",
    packages=["opd", "opd.torch"],
    ext_modules=[Extension(
        "opd._C",
        sources=[os.path.join("src", f) for f in ("module.c", "client.c", "tensor.c",
                                                  "values.c", "graph.c")],
        include_dirs=INCLUDES,
        extra_objects=OBJECTS,
        libraries=LIBRARIES,
        extra_link_args=LINK_ARGS,
        extra_compile_args=["-std=c17", "-D_POSIX_C_SOURCE=200809L", "-fvisibility=hidden"],
    )],
    cmdclass={"build_py": BuildPy},
    python_requires=">=3.9",
)
