"""PyTorch's operator suite (op_db) through opd.torch.remote, in the default mode and under
cpu_fallback(): no sample may give a result that differs from eager (opinfo_run.py says what
is compared). Each mode runs in a subprocess of its own with a deadline, both at once; the
counts are printed. Run by ctest as python.opinfo (OPD_OPINFO=1): python.client skips it."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
if not os.environ.get("OPD_OPINFO"):
    pytest.skip("the OpInfo suite runs as its own ctest entry (python.opinfo; set OPD_OPINFO=1)",
                allow_module_level=True)

from conftest import _daemon_path  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEADLINE = 100  # seconds for each mode; the runner stops itself past it


def test_opinfo_suite_is_never_wrong(tmp_path):
    procs = {}
    for mode in ("default", "fallback"):
        out = tmp_path / f"{mode}.json"
        procs[mode] = (out, subprocess.Popen(
            [sys.executable, os.path.join(HERE, "opinfo_run.py"), "--mode", mode,
             "--json", str(out), "--daemon", _daemon_path(), "--deadline", str(DEADLINE)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    failures = []
    for mode, (out, proc) in procs.items():
        try:
            text, _ = proc.communicate(timeout=DEADLINE + 60)
        except subprocess.TimeoutExpired:
            proc.kill()
            text, _ = proc.communicate()
            failures.append(f"{mode}: did not finish")
        print(text)
        if proc.returncode != 0:
            failures.append(f"{mode}: exit status {proc.returncode}\n{text[-3000:]}")
            continue
        summary = json.loads(out.read_text())
        assert not summary["wrong"] and not summary["daemon_crashes"]
        assert summary["operators"]["all"] > 0
    assert not failures, "\n".join(failures)
