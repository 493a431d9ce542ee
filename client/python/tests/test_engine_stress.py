"""The request engine under a random mix (fixed seeds): chains of dependent futures,
failures that propagate to the calls that use them, tensors dropped while their producers
are in flight, waits at random points. At the end the values are right and the session holds
exactly the handles of the live Tensors."""
import random

import numpy as np
import pytest

import opd


def _clip(v):
    return None if v is None else max(-8.0, min(8.0, v))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_mix(daemon, seed):
    rng = random.Random(seed)
    with opd.connect(daemon.unix) as c:
        ops = c.ops.aten
        live = []  # (tensor, its value, or None when its producer or an input failed)
        for _ in range(8):
            v = float(rng.randint(-3, 3))
            live.append((c.upload(np.full(4, v, np.float32)), v))
        bad = c.upload(np.zeros(3, np.float32))  # adding it fails: the shapes differ
        s = None
        for _ in range(400):
            r = rng.random()
            (x, vx), (y, vy) = rng.choice(live), rng.choice(live)
            both = None if vx is None or vy is None else (vx, vy)
            if r < 0.4:  # two dependent calls
                s = ops.add.Tensor.future(x, y)
                out = ops.clamp.future(s, -8, 8).outputs[0]
                value = None if both is None else _clip(both[0] + both[1])
            elif r < 0.55:
                out = ops.maximum.future(x, y).outputs[0]
                value = None if both is None else max(both)
            elif r < 0.65:
                out = ops.add.Tensor.future(x, bad).outputs[0]
                value = None
            elif r < 0.8:
                out = ops.neg.future(x).outputs[0]
                value = None if vx is None else -vx
            elif r < 0.9:
                if len(live) > 4:
                    live.pop(rng.randrange(len(live)))  # dropped, maybe still pending
                continue
            else:
                t, v = rng.choice(live)
                if v is None:
                    with pytest.raises(opd.InvalidArgument):
                        t.wait()
                else:
                    np.testing.assert_array_equal(t.numpy(), np.full(4, v, np.float32))
                continue
            live.append((out, value))
            if len(live) > 40:
                live.pop(0)
        for t, v in live:
            if v is None:
                with pytest.raises(opd.InvalidArgument, match="must match the size"):
                    t.wait()
            else:
                np.testing.assert_array_equal(t.numpy(), np.full(4, v, np.float32))
        held = sum(v is not None for _, v in live) + 1  # and `bad`
        del x, y, out, t, s
        c.wait_all()
        assert max(daemon.sessions(), key=lambda s: s["id"])["handles"] == held
