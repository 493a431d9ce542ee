"""Client.load_ops against a hostile status endpoint: the typed calls are generated Python
source, so a listing must never get code of its own into it, nor file a schema under another
operator's name ([Note: Generated source from checked names only] in opd/_schema.py)."""
import http.server
import inspect
import json
import random
import re
import threading

import numpy as np
import pytest

import opd

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# each, if it reached the generated source, would set opd._pwned
PAYLOAD = "__import__('sys').modules['opd'].__setattr__('_pwned', 1)"
HOSTILE = [
    f"evil::f(Tensor a=0):\n    {PAYLOAD}\n    def g(Tensor b) -> Tensor",
    f"evil::f(Tensor a, Tensor b=({PAYLOAD})) -> Tensor",
    f"evil::f(Tensor {PAYLOAD}) -> Tensor",
    f"evil::f(Tensor a, *, Tensor b=1, int c={PAYLOAD}) -> Tensor",
    f"evil::f.x_{PAYLOAD}(Tensor a) -> Tensor",
    f"evil{PAYLOAD}::f(Tensor a) -> Tensor",
    "evil::f(Tensor a):#(Tensor b) -> Tensor",
    "evil::f(Tensor a, Tensor a) -> Tensor",
    "evil::f(Tensor _call) -> Tensor",
    "evil::f(Tensor _op, Tensor x__d) -> Tensor",
    "evil::f(Tensor a\u00e9) -> Tensor",
    "evil::f(Tensor a=" + "[" * 200 + ") -> Tensor",
    "evil::f(Tensor a={1: 2}) -> Tensor",
    "evil::f(Tensor a=" + "1" * 5000 + ") -> Tensor",
]


def _bind_all(c):
    for name in list(c._schemas):
        fn = c._typed(name)
        for p in inspect.signature(fn).parameters:
            assert IDENT.match(p), (name, p)


def test_hostile_schemas_never_run_code(client):
    added = client.add_schemas(HOSTILE)
    _bind_all(client)
    assert not hasattr(opd, "_pwned")
    assert added == 0  # every one of them breaks a rule
    assert not any(n.startswith("evil") for n in client._schemas)


def test_a_listing_cannot_replace_an_operator(client):
    before = client._typed("aten::add.Tensor")
    listing = {"ops": [
        # filed under add's name, but it is another operator's schema
        {"name": "aten::add.Tensor", "schema": "aten::sub.Tensor(Tensor self, Tensor other, "
                                               "*, Scalar alpha=1) -> Tensor"},
        # the same name, another signature
        {"name": "aten::add.Tensor", "schema": "aten::add.Tensor(Tensor other, Tensor self) "
                                               "-> Tensor"},
        {"name": "x::y", "schema": "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor"},
    ]}
    client.add_schemas(opd._client._listed_schemas(listing))
    assert client._typed("aten::add.Tensor").schema is before.schema
    assert "x::y" not in client._schemas
    a = client.upload(np.ones(2, np.float32))
    b = client.upload(np.full(2, 3, np.float32))
    np.testing.assert_array_equal(client.ops.aten.add.Tensor(a, b, alpha=2).numpy(), [7, 7])


def test_random_schemas_bind_only_identifiers(client):
    rng = random.Random(1234)
    pieces = ["Tensor", "int", "int[]", "float?", " ", ",", "*", "=", "(", ")", "[", "]", "'",
              '"', ":", "\n", "#", ";", "\\", "a", "b", "_", "0", "1", "->", ".", "é", "{", "}",
              "lambda", "import", "__", "None", "True"]
    texts = []
    for _ in range(3000):
        args = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        texts.append(f"fz::op{rng.randint(0, 10**6)}({args}) -> Tensor")
    client.add_schemas(texts)
    _bind_all(client)
    assert not hasattr(opd, "_pwned")


class _Listing(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def hostile_endpoint():
    server = http.server.HTTPServer(("127.0.0.1", 0), _Listing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_load_ops_from_a_hostile_endpoint(client, hostile_endpoint):
    url = f"http://127.0.0.1:{hostile_endpoint.server_port}"
    ops = [{"name": s.partition("(")[0], "schema": s} for s in HOSTILE]
    ops.append({"name": "aten::add.Tensor", "schema": "aten::add.Tensor(Tensor other) -> "
                                                      "Tensor"})
    ops.append({"name": "plug::twice", "schema": "plug::twice(Tensor self) -> Tensor"})
    _Listing.body = json.dumps({"ops": ops}).encode()
    n = len(client._schemas)
    assert client.load_ops(url) == n + 1  # only plug::twice
    _bind_all(client)
    assert not hasattr(opd, "_pwned")
    assert list(inspect.signature(client.ops.aten.add.Tensor).parameters) == [
        "self", "other", "alpha"]
    for body in (b"[1, 2]", b"{\"ops\": 3}", b"not json", b"[" * 100000):
        _Listing.body = body
        with pytest.raises(opd.InvalidArgument):
            client.load_ops(url)
