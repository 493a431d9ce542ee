"""`pip install --no-build-isolation` of the package, offline, into a fresh virtual
environment, against the C client library of the build tree the tests run from."""
import os
import shutil
import subprocess
import sys

import pytest

import opd

HERE = os.path.dirname(os.path.abspath(__file__))


def test_pip_install_offline(tmp_path, daemon):
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(opd.__file__))))
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        pytest.skip("the package under test is not the one of a build tree")
    src = tmp_path / "src"  # a copy: pip builds in the tree it is given
    shutil.copytree(os.path.dirname(HERE), src, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__", "tests"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    py = str(venv / "bin" / "python")
    env = dict(os.environ, OPD_BUILD_DIR=build, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", str(src)],
                   check=True, env=env, timeout=600)
    code = ("import numpy, opd, sys; c = opd.connect(sys.argv[1]); "
            "a = c.upload(numpy.arange(3, dtype=numpy.float32)); "
            "print(opd.__file__); print(c.ops.aten.add.Tensor(a, a, alpha=2).numpy().tolist())")
    out = subprocess.run([py, "-c", code, daemon.unix], check=True, env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=60).stdout.split("\n")
    assert out[0].startswith(str(venv))
    assert out[1] == "[0.0, 3.0, 6.0]"
