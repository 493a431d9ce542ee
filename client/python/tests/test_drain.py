"""The daemon's session drain and stop (docs/CONFIG.md, "Stopping"): on SIGTERM, /v1/ready
answers 503 at once, a new session is refused as draining, the open one still computes,
and the daemon exits 0 once it closes; a second signal, or `sigterm: stop`, stops at once.
A daemon of the build of its own per test."""
import json
import signal
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

import opd
from conftest import Daemon


@pytest.fixture
def daemon():
    d = Daemon()
    yield d
    d.stop()


def _ready(d):
    """(HTTP code, JSON body) of GET /v1/ready."""
    try:
        with urllib.request.urlopen(d.status + "/v1/ready", timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def _wait_draining(d):
    # the signal is handled by the daemon's loop, after kill() returns: bounded, not timed
    deadline = time.monotonic() + 10
    while _ready(d)[0] == 200 and time.monotonic() < deadline:
        time.sleep(0.01)


def test_sigterm_drains_then_exits_0(daemon):
    assert _ready(daemon) == (200, {"status": "ready"})
    c = opd.connect(daemon.tcp)
    a = c.upload(np.arange(4, dtype=np.float32))
    daemon.proc.send_signal(signal.SIGTERM)
    _wait_draining(daemon)
    assert _ready(daemon) == (503, {"status": "unavailable", "reason": "draining"})
    assert daemon.get("/v1/health") == {"status": "ok"}
    assert daemon.get("/v1/info")["draining"] is True
    with pytest.raises(opd.Error) as e:
        opd.connect(daemon.tcp)
    assert "draining" in str(e.value)
    # the open session goes on: it computes and downloads as before
    out = c.download(c.ops.aten.add.Tensor(a, a))
    np.testing.assert_array_equal(out, np.arange(4, dtype=np.float32) * 2)
    assert daemon.proc.poll() is None
    c.close()
    assert daemon.proc.wait(20) == 0
    assert "drained: no session is open" in open(daemon.log_path).read()


def test_second_sigterm_stops_at_once(daemon):
    c = opd.connect(daemon.tcp)
    daemon.proc.send_signal(signal.SIGTERM)
    _wait_draining(daemon)
    assert daemon.proc.poll() is None  # the session keeps it running
    daemon.proc.send_signal(signal.SIGTERM)
    assert daemon.proc.wait(20) == 0
    with pytest.raises(opd.ConnectionLost):
        c.upload(np.ones(3, np.float32))
    c.close()


def test_sigterm_stop_ends_the_sessions():
    d = Daemon("--sigterm", "stop")
    try:
        c = opd.connect(d.tcp)
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(20) == 0
        with pytest.raises(opd.ConnectionLost):
            c.upload(np.ones(3, np.float32))
        c.close()
    finally:
        d.stop()


def test_session_drain_timeout():
    d = Daemon("--session-drain-timeout-ms", "200")
    try:
        c = opd.connect(d.tcp)
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(20) == 0
        assert "session drain timeout (200 ms)" in open(d.log_path).read()
        c.close()
    finally:
        d.stop()
