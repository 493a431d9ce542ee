"""Fixtures: a daemon the tests start (the `opd` of the build: $OPD_DAEMON, else found next to
the package on PYTHONPATH, BUILD/python -> BUILD/server/opd), on a Unix socket, an ephemeral
TCP port and an ephemeral status port, read back from its log."""
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.request

import pytest

import opd


def _daemon_path():
    path = os.environ.get("OPD_DAEMON")
    if path:
        return path
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(opd.__file__)))  # BUILD/python
    return os.path.join(os.path.dirname(pkg), "server", "opd")


class Daemon:
    """A running `opd`: .unix, .tcp (URLs), .status (http://...), .stop(), .kill()."""

    def __init__(self, *extra):
        exe = _daemon_path()
        if not os.access(exe, os.X_OK):
            pytest.fail(f"no opd daemon at {exe} (set OPD_DAEMON)")
        self.dir = tempfile.TemporaryDirectory(prefix="opd-pytest-")
        self.unix = f"unix://{self.dir.name}/opd.sock"
        self.log_path = os.path.join(self.dir.name, "opd.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [exe, "--listen", self.unix, "--listen", "tcp://127.0.0.1:0", "--status",
             "http://127.0.0.1:0", "--admin", "", "--workers", "2", *extra],
            stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 20
        text = ""
        while time.monotonic() < deadline:
            with open(self.log_path) as f:
                text = f.read()
            if " ready" in text:
                break
            if self.proc.poll() is not None:
                pytest.fail(f"opd exited at start: {text}")
            time.sleep(0.02)
        else:
            self.kill()
            pytest.fail(f"opd not ready after 20 s: {text}")
        self.tcp = re.search(r"listening on (tcp://\S+)", text).group(1)
        self.status = re.search(r"status endpoint on (http://\S+?)/?$", text, re.M).group(1)

    def get(self, path):
        with urllib.request.urlopen(self.status + path, timeout=10) as r:
            return json.load(r)

    def sessions(self):
        return self.get("/v1/sessions")["sessions"]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self):
        if self.proc.poll() is None:
            # SIGINT stops at once; SIGTERM would first wait for sessions a test left open
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()
        self.dir.cleanup()


@pytest.fixture(scope="session")
def daemon():
    d = Daemon()
    yield d
    d.stop()


@pytest.fixture
def client(daemon):
    with opd.connect(daemon.unix) as c:
        yield c


@pytest.fixture
def fresh_daemon():
    """A daemon of its own, for tests that kill it."""
    d = Daemon()
    yield d
    d.stop()

