"""Addresses that name several daemons and the placement of a session among them
(opd.connect's placement, affinity_key, connect_timeout, liveness_timeout; c.endpoint), and
the session's end: opd.ConnectionLost naming the daemon, nothing reconnected. Three daemons
of the build on ephemeral loopback ports."""
import socket

import numpy as np
import pytest

import opd
from conftest import Daemon


@pytest.fixture(scope="module")
def three():
    ds = [Daemon() for _ in range(3)]
    yield ds
    for d in ds:
        d.stop()


def _listed(daemons):
    return "tcp://" + ",".join(d.tcp[len("tcp://"):] for d in daemons)


def _dead_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_first_and_endpoint(three):
    url = _listed(three)
    with opd.connect(url) as c:
        assert c.endpoint == three[0].tcp
        a = c.upload(np.arange(4, dtype=np.float32))
        np.testing.assert_array_equal(c.ops.aten.add.Tensor(a, a).numpy(),
                                      2 * np.arange(4, dtype=np.float32))


def test_failover_past_a_dead_address(three):
    url = f"tcp://127.0.0.1:{_dead_port()}," + three[1].tcp[len("tcp://"):]
    with opd.connect(url, connect_timeout=5) as c:
        assert c.endpoint == three[1].tcp


def test_nobody_there_names_each_address():
    port1, port2 = _dead_port(), _dead_port()
    with pytest.raises(opd.ConnectFailed) as e:
        opd.connect(f"tcp://127.0.0.1:{port1},127.0.0.1:{port2}", connect_timeout=2)
    assert f"127.0.0.1:{port1}" in str(e.value) and f"127.0.0.1:{port2}" in str(e.value)


def test_least_loaded_avoids_the_busy_daemon(three):
    busy = [opd.connect(three[0].tcp) for _ in range(12)]
    try:
        placed = [opd.connect(_listed(three), placement="least_loaded") for _ in range(8)]
        assert all(c.endpoint != three[0].tcp for c in placed)
        for c in placed:
            c.close()
    finally:
        for c in busy:
            c.close()


def test_affinity_is_stable_and_independent_of_order(three):
    homes = set()
    for url in (_listed(three), _listed(three[::-1])):
        for _ in range(3):
            with opd.connect(url, placement="affinity", affinity_key="modelA") as c:
                homes.add(c.endpoint)
    assert len(homes) == 1
    keys = {}
    for k in range(18):
        with opd.connect(_listed(three), placement="affinity", affinity_key=f"m{k}") as c:
            keys[c.endpoint] = keys.get(c.endpoint, 0) + 1
    assert set(keys) == {d.tcp for d in three}


def test_bad_options():
    with pytest.raises(ValueError):
        opd.connect("tcp://127.0.0.1:1", placement="nearest")
    with pytest.raises(opd.InvalidArgument, match="affinity_key"):
        opd.connect("tcp://127.0.0.1:1", placement="affinity")


def test_random_reaches_every_daemon(three):
    seen = set()
    for _ in range(60):  # missing one of three: about 1e-10
        with opd.connect(_listed(three), placement="random", liveness_timeout=5) as c:
            seen.add(c.endpoint)
    assert seen == {d.tcp for d in three}


def test_lost_session_is_final(fresh_daemon):
    c = opd.connect(fresh_daemon.tcp)
    a = c.upload(np.ones(3, np.float32))
    fresh_daemon.kill()
    with pytest.raises(opd.ConnectionLost) as e:
        c.ops.aten.add.Tensor(a, a)
    assert isinstance(e.value, opd.Error)
    text = str(e.value)
    assert "session lost" in text and fresh_daemon.tcp in text
    assert "handles and graphs are gone" in text
    assert not c.connected
    with pytest.raises(opd.ConnectionLost):
        c.upload(np.ones(3, np.float32))
    c.close()


def _varint(data, pos):
    value, shift = 0, 0
    while True:
        b = data[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        shift += 7
        if not b & 0x80:
            return value, pos


def _mute_daemon(listener):
    """Answers one connection's hello (Response{id, hello{protocol_version: 1}}), then reads
    and answers nothing until the client goes."""
    conn, _ = listener.accept()
    with conn:
        length = int.from_bytes(conn.recv(4, socket.MSG_WAITALL), "little")
        request = conn.recv(length, socket.MSG_WAITALL)
        assert request[0] == 0x08  # Request.id, field 1
        rid, _ = _varint(request, 1)
        idv = bytearray()
        while True:
            idv.append((rid & 0x7F) | (0x80 if rid > 0x7F else 0))
            rid >>= 7
            if not rid:
                break
        body = b"\x08" + bytes(idv) + b"\x1a\x02\x08\x01"
        conn.sendall(len(body).to_bytes(4, "little") + body)
        while conn.recv(65536):
            pass


def test_call_deadline_ends_the_session():
    import threading
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    url = "tcp://127.0.0.1:%d" % listener.getsockname()[1]
    t = threading.Thread(target=_mute_daemon, args=(listener,), daemon=True)
    t.start()
    c = opd.connect(url, call_timeout=0.3)
    with pytest.raises(opd.ConnectionLost, match="call deadline of 300 ms"):
        c.ping(b"x")
    assert url in str(c.endpoint) and not c.connected
    c.close()
    t.join(10)
    listener.close()
