"""Requests written in batches and completions processed at submission ([Note: Batched
writes] in client/src/connection.c, [Note: Completions at submission] in
client/python/src/opdpy.h): a program that never waits keeps its handles bounded, held
requests are written by every wait and by flush(), and errors of calls nobody waited for
surface where they did before."""
import time

import numpy as np
import pytest

import opd
from conftest import Daemon


def session_of(daemon):
    (s,) = daemon.sessions()
    return s


@pytest.fixture
def small_daemon():
    """A daemon whose sessions may hold 4096 handles: more than the requests in flight
    (1024) and a batch of releases, far fewer than the calls the tests make."""
    d = Daemon("--max-handles", "4096")
    yield d
    d.stop()


def test_non_waiting_calls_keep_handles_bounded(small_daemon):
    # each result dies at once; its handle must be released before the limit is reached,
    # although the program never waits
    with opd.connect(small_daemon.unix) as c:
        a = c.upload(np.ones(4, np.float32))
        add = c.ops.aten.add.Tensor
        for _ in range(20000):
            add.future(a, a)
        last = add.future(a, a)
        np.testing.assert_array_equal(last.result().numpy(), [2, 2, 2, 2])
        c.wait_all()
        assert session_of(small_daemon)["handles"] == 2
        assert session_of(small_daemon)["errors"] == 0


def test_a_chain_of_dependent_calls_longer_than_the_queue(small_daemon):
    # every call waits for the previous one's handle: the queue of waiting calls is bounded
    # by back-pressure, and the results are the same
    with opd.connect(small_daemon.unix) as c:
        x = c.upload(np.zeros(3, np.float32))
        one = c.upload(np.ones(3, np.float32))
        for _ in range(3000):
            x = c.ops.aten.add.Tensor.future(x, one).outputs[0]
        assert c.pending <= 1024 + c.server["max_in_flight"]
        np.testing.assert_array_equal(x.numpy(), [3000, 3000, 3000])
        c.wait_all()
        assert session_of(small_daemon)["handles"] == 2  # one and the last x


def test_held_requests_go_out_at_flush(daemon):
    with opd.connect(daemon.unix, batch_us=60_000_000) as c:
        a = c.upload(np.ones(2, np.float32))  # waited for: written at once
        before = next(s for s in daemon.sessions() if s["handles"] == 1)
        f = c.ops.aten.neg.future(a)
        time.sleep(0.05)
        now = next(s for s in daemon.sessions() if s["id"] == before["id"])
        assert now["calls"] == before["calls"]  # held: the daemon has not seen it
        c.flush()
        deadline = time.monotonic() + 10
        while next(s for s in daemon.sessions() if s["id"] == before["id"])["calls"] == \
                before["calls"]:
            assert time.monotonic() < deadline, "flush() did not write the held call"
            time.sleep(0.01)
        np.testing.assert_array_equal(f.result().numpy(), [-1, -1])


def test_a_wait_writes_what_is_held(daemon):
    with opd.connect(daemon.unix, batch_us=60_000_000) as c:
        a = c.upload(np.arange(3, dtype=np.float32))
        futures = [c.ops.aten.mul.Tensor.future(a, a) for _ in range(5)]
        np.testing.assert_array_equal(futures[-1].result(timeout=10).numpy(), [0, 1, 4])
        assert all(f.done() for f in futures)
        c.wait_all()
        assert c.pending == 0


def test_batching_off_writes_each_request(daemon):
    with opd.connect(daemon.unix, batch_us=0) as c:
        a = c.upload(np.ones(2, np.float32))
        before = next(s for s in daemon.sessions() if s["handles"] == 1)
        f = c.ops.aten.neg.future(a)
        deadline = time.monotonic() + 10
        while next(s for s in daemon.sessions() if s["id"] == before["id"])["calls"] == \
                before["calls"]:
            assert time.monotonic() < deadline, "an unbatched call was not written"
            time.sleep(0.01)
        np.testing.assert_array_equal(f.result().numpy(), [-1, -1])
    with pytest.raises(ValueError):
        opd.connect(daemon.unix, batch_us=-1)


def test_errors_of_non_waiting_calls_surface_at_the_wait(client):
    a = client.upload(np.zeros(3, np.float32))
    b = client.upload(np.zeros(4, np.float32))
    add = client.ops.aten.add.Tensor
    good = [add.future(a, a) for _ in range(10)]
    bad = add.future(a, b)  # held with the others: nothing is raised here
    later = [add.future(a, a) for _ in range(10)]
    dependent = client.ops.aten.relu.future(bad)
    with pytest.raises(opd.InvalidArgument, match="must match the size"):
        bad.result()
    assert dependent.exception() is bad.exception()
    with pytest.raises(opd.InvalidArgument):
        dependent.outputs[0].numpy()
    for f in good + later:
        np.testing.assert_array_equal(f.result().numpy(), [0, 0, 0])


def test_lost_connection_fails_held_requests(fresh_daemon):
    with opd.connect(fresh_daemon.unix, batch_us=60_000_000) as c:
        a = c.upload(np.ones(2, np.float32))
        fresh_daemon.kill()
        f = c.ops.aten.neg.future(a)  # held: the failure is found when it is written
        with pytest.raises(opd.ConnectionLost):
            f.result(timeout=10)


def test_opdtensor_loop_of_100000_operations(daemon):
    # the PyTorch bridge sends each operation without waiting; the session's default limit
    # (65,536 handles) must hold for any number of them whose results die
    torch = pytest.importorskip("torch")
    import opd.torch
    with opd.connect(daemon.unix) as c:
        x = opd.torch.remote(torch.ones(4), c)
        base = next(s for s in daemon.sessions() if s["handles"] == 1)
        for _ in range(100_000):
            y = x + 1
        assert torch.equal(y.cpu(), torch.full((4,), 2.0))
        c.wait_all()
        session = next(s for s in daemon.sessions() if s["id"] == base["id"])
        assert session["handles"] == 2 and session["errors"] == 0


def test_done_completes_a_held_request(daemon):
    # done() never waits, but it writes what is held and reads what came
    with opd.connect(daemon.unix, batch_us=60_000_000) as c:
        a = c.upload(np.ones(2, np.float32))
        f = c.ops.aten.neg.future(a)
        deadline = time.monotonic() + 10
        while not f.done():
            assert time.monotonic() < deadline, "done() never saw the held call complete"
            time.sleep(0.001)
        np.testing.assert_array_equal(f.result().numpy(), [-1, -1])
