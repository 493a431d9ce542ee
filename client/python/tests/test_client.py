"""The plain client against a daemon the tests start: connections, uploads and downloads,
typed and boxed calls, futures, dispatch state, handle release, errors, a killed daemon."""
import inspect
import struct
import threading
import time

import numpy as np
import pytest

import opd


def newest_session(daemon):
    return max(daemon.sessions(), key=lambda s: s["id"])


def test_connect_unix_and_tcp(daemon):
    for url in (daemon.unix, daemon.tcp):
        with opd.connect(url, name="pytest") as c:
            assert c.connected and not c.closed
            assert c.server["server"].startswith("opd ")
            assert c.server["protocol_version"] == 1
            c.ping(b"hello")
        assert c.closed and not c.connected


def test_connect_failures(daemon, tmp_path):
    with pytest.raises(opd.ConnectFailed):
        opd.connect(f"unix://{tmp_path}/nothing.sock")
    with pytest.raises(opd.InvalidArgument, match="not an opd daemon"):
        opd.connect("tcp://" + daemon.status[len("http://"):])
    with pytest.raises(opd.InvalidArgument):
        opd.connect("gopher://x")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.int32,
                                   np.int16, np.int8, np.uint8, np.bool_])
def test_upload_download_round_trip(client, dtype):
    x = (np.arange(24).reshape(2, 3, 4) % 5).astype(dtype)
    t = client.upload(x)
    assert t.dtype == opd.dtype_code(np.dtype(dtype)) and t.shape == (2, 3, 4)
    y = t.numpy()
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(x, y)
    base = y.base.obj if isinstance(y.base, memoryview) else y.base
    assert isinstance(base, opd._C.Buffer)  # the download's own memory, no copy


def test_scalars_and_empty_tensors(client):
    np.testing.assert_array_equal(client.upload(np.float32(2.5)).numpy(), np.float32(2.5))
    e = client.upload(np.zeros((0, 3), np.float32)).numpy()
    assert e.shape == (0, 3)


def test_download_into_callers_buffer(client):
    x = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
    t = client.upload(x)
    out = np.empty_like(x)
    assert client.download(t, out=out) is out
    np.testing.assert_array_equal(out, x)
    with pytest.raises(ValueError):
        client.download(t, out=np.empty((64, 31), np.float32))


def test_upload_holds_the_callers_buffer_until_sent(client):
    data = bytearray(struct.pack("4f", 1, 2, 3, 4))
    f = client.upload_async(data, dtype="float32", shape=(4,))
    with pytest.raises(BufferError):  # the bytes go out from this buffer: it is held
        data.extend(b"xxxx")
    t = f.result()
    data.extend(b"xxxx")  # released once the upload completed
    np.testing.assert_array_equal(t.numpy(), [1, 2, 3, 4])


def test_upload_refuses_strided_arrays(client):
    with pytest.raises(TypeError, match="C-contiguous"):
        client.upload(np.zeros((4, 4), np.float32)[:, 1])


def test_typed_calls_have_the_schema_signature(client):
    add = client.ops.aten.add.Tensor
    assert str(inspect.signature(add)) == "(self, other, *, alpha=1)"
    assert add.schema.text.startswith("aten::add.Tensor(Tensor self")
    a = client.upload(np.arange(3, dtype=np.float32))
    b = client.upload(np.ones(3, np.float32))
    np.testing.assert_array_equal(add(a, b).numpy(), [1, 2, 3])
    np.testing.assert_array_equal(add(a, b, alpha=2).numpy(), [2, 3, 4])
    np.testing.assert_array_equal(add(a, b, alpha=0.5).numpy(), [0.5, 1.5, 2.5])
    with pytest.raises(TypeError):  # alpha is keyword-only
        add(a, b, 2)
    x = client.upload(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(client.ops.aten.sum.dim_IntList(x, [1]).numpy(), [3, 12])
    np.testing.assert_array_equal(
        client.ops.aten.sum.dim_IntList(x, [1], keepdim=True).numpy(), [[3], [12]])
    np.testing.assert_array_equal(client.ops.aten.slice.Tensor(x, 1, 1).numpy(),
                                  [[1, 2], [4, 5]])
    assert client.ops.aten.sum.dim_IntList(x, [0], dtype="float64").numpy().dtype == np.float64
    # the overload packet picks the overload the arguments fit
    np.testing.assert_array_equal(client.ops.aten.add(a, 1.5).numpy(), [1.5, 2.5, 3.5])
    # several results
    out, mean, rstd = client.ops.aten.native_layer_norm(x, [3], None, None, 1e-5)
    np.testing.assert_allclose(mean.numpy().ravel(), [1, 4])


def test_boxed_calls_by_name(client):
    a = client.upload(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(client.call("aten::add.Tensor", a, a, alpha=3).numpy(),
                                  [0, 4, 8])
    np.testing.assert_array_equal(client.call_async("aten::neg", a).result().numpy(),
                                  [0, -1, -2])
    with pytest.raises(opd.NotFound):
        client.call("myops::nothing_here", a, 1, [1, 2], 0.5)


def test_literals_pass_by_value(client):
    a = client.upload(np.arange(3, dtype=np.float32))
    two = opd.Literal("float32", (), struct.pack("f", 2.0))
    np.testing.assert_array_equal(client.ops.aten.mul.Tensor(a, two).numpy(), [0, 2, 4])


def test_futures_pipeline_dependent_calls(client):
    a = client.upload(np.zeros(4, np.float32))
    one = client.upload(np.ones(4, np.float32))
    x = a
    futures = []
    for _ in range(200):  # each call takes the previous one's result before it exists
        x = client.ops.aten.add.Tensor.future(x, one)
        futures.append(x)
    assert futures[-1].outputs[0].ready is False
    np.testing.assert_array_equal(futures[-1].result().numpy(), [200] * 4)
    assert all(f.done() for f in futures)
    assert client.pending == 0


def test_future_errors_propagate_to_dependents(client):
    a = client.upload(np.zeros(3, np.float32))
    b = client.upload(np.zeros(4, np.float32))
    bad = client.ops.aten.add.Tensor.future(a, b)
    later = client.ops.aten.relu.future(bad)
    err = later.exception()
    assert isinstance(err, opd.InvalidArgument) and err is bad.exception()
    assert err.code == "INVALID_ARGUMENT" and err.op == "aten::add.Tensor"
    assert "must match the size" in err.message
    with pytest.raises(opd.InvalidArgument):
        later.outputs[0].numpy()
    # the session goes on
    np.testing.assert_array_equal(client.ops.aten.relu(a).numpy(), [0, 0, 0])


def test_errors_are_exceptions_by_code(client):
    a = client.upload(np.zeros((2, 3), np.float32))
    with pytest.raises(opd.InvalidArgument) as e:
        client.ops.aten.mm(a, a)
    assert e.value.op == "aten::mm" and isinstance(e.value, ValueError)
    with pytest.raises(opd.IndexOutOfRange, match="Dimension out of range") as e:
        client.ops.aten.transpose.int(a, 0, 5)
    assert isinstance(e.value, IndexError) and e.value.code == "INDEX_OUT_OF_RANGE"
    with pytest.raises(opd.Unimplemented, match="from the 'Python' backend") as e:
        with client.dispatch(include=["Python"]):  # a key no kernel of aten::neg serves
            client.ops.aten.neg(a)
    assert isinstance(e.value, NotImplementedError) and e.value.code == "UNIMPLEMENTED"
    with pytest.raises(TypeError, match="argument 'dim0'"):
        client.ops.aten.transpose.int(a, "0", 1)


def test_dispatch_state(daemon):
    with opd.connect(daemon.unix) as c:
        s = newest_session(daemon)
        assert "AutocastCPU" in s["exclude"]
        with c.dispatch(remove_exclude=["AutocastCPU"], include=["Tracer"]):
            s = newest_session(daemon)
            assert "AutocastCPU" not in s["exclude"] and "Tracer" in s["include"]
            assert c.dispatch_state["remove_exclude"] == ("AutocastCPU",)
        s = newest_session(daemon)
        assert "AutocastCPU" in s["exclude"] and "Tracer" not in s["include"]
        with pytest.raises(opd.InvalidArgument):
            c.set_dispatch_state(include=["NoSuchKey"])


def test_handles_are_released_when_tensors_die(daemon):
    with opd.connect(daemon.unix) as c:
        base = c.upload(np.ones(8, np.float32))
        c.wait_all()
        assert newest_session(daemon)["handles"] == 1
        made = [c.ops.aten.neg(base) for _ in range(150)]
        assert newest_session(daemon)["handles"] == 151
        del made
        c.wait_all()  # the releases were batched; a wait sends what is left
        assert newest_session(daemon)["handles"] == 1
        t = c.ops.aten.neg(base)
        t.release()
        c.wait_all()
        assert newest_session(daemon)["handles"] == 1
        with pytest.raises(ValueError, match="released"):
            c.ops.aten.neg(t)
        sessions = len(daemon.sessions())
    time.sleep(0.05)
    assert len(daemon.sessions()) == sessions - 1  # closing ended the session


def test_closed_client(daemon):
    c = opd.connect(daemon.unix)
    a = c.upload(np.ones(2, np.float32))
    pending = c.ops.aten.neg.future(a)
    c.close()
    assert isinstance(pending.exception(), opd.Cancelled)
    with pytest.raises(opd.Cancelled):
        c.ops.aten.neg(a)
    with pytest.raises(opd.Cancelled):
        a.numpy()


def test_threads_share_a_client(client):
    a = client.upload(np.arange(100, dtype=np.float32))
    errors = []

    def work(k):
        try:
            for i in range(50):
                r = client.ops.aten.mul.Scalar(a, k)
                np.testing.assert_array_equal(r.numpy(), np.arange(100) * k)
        except Exception as e:  # noqa: BLE001: reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors


def test_killed_daemon_mid_call(fresh_daemon):
    c = opd.connect(fresh_daemon.tcp)
    big = c.upload(np.ones((1024, 1024), np.float32))
    result = {}

    def long_calls():
        try:
            for _ in range(10000):
                c.ops.aten.mm(big, big)
        except opd.Error as e:
            result["error"] = e

    t = threading.Thread(target=long_calls)
    t.start()
    time.sleep(0.3)
    fresh_daemon.kill()
    t.join(20)
    assert not t.is_alive(), "a call hung after the daemon died"
    assert isinstance(result.get("error"), opd.ConnectionLost)
    assert not c.connected
    with pytest.raises(opd.ConnectionLost):
        c.ops.aten.neg.future(big).result(timeout=10)
    c.close()


def test_every_builtin_schema_has_a_typed_call(client):
    schemas = opd._ops.builtin_schemas()
    assert len(schemas) >= 74 and "aten::split.Tensor" in schemas
    for name, schema in schemas.items():
        fn = client._typed(name)
        params = inspect.signature(fn).parameters
        assert [p for p in params] == [a.pyname for a in schema.arguments], name
    parts = client.ops.aten.split.Tensor(client.upload(np.arange(10, dtype=np.float32)), 4)
    assert [p.numpy().tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_operators_from_the_status_endpoint(daemon):
    with opd.connect(daemon.unix) as c:
        listed = {op["name"] for op in daemon.get("/v1/ops")["ops"] if op["schema"]}
        assert c.load_ops(daemon.status) >= len(listed)
        assert listed <= set(c._schemas)
        a = c.upload(np.ones(2, np.float32))
        np.testing.assert_array_equal(c.ops.aten.add.Tensor(a, a).numpy(), [2, 2])
