"""Whole models nobody here wrote run in the daemon and match eager PyTorch: torchvision's
resnet18, mobilenet_v2, efficientnet_b0 and vit_b_16 (random weights, batch 1, small images),
nn.TransformerEncoder, nn.LSTM, nn.GRU and a Conv2d/BatchNorm2d/MaxPool2d/Dropout classifier.

- forward, in eval and in train mode, through opd.torch.remote (op by op) and through
  opd.torch.compile (one graph), against eager; in train mode the batch norm buffers the
  forward updates too (remote);
- one training step (cross-entropy, backward, SGD with momentum) through remote: the loss,
  every gradient (held by the daemon) and every parameter after the step.

A value matches when it is within rtol 1e-3 / atol 1e-4 of eager's, or, where float32
accumulation order differs, when its largest error against a float64 eager reference is at
most twice eager float32's own. Train mode runs with the models' dropout and stochastic depth
probabilities set to 0: random operators draw from the daemon's generator, not PyTorch's, and
are tested statistically elsewhere.

A case the daemon cannot run yet for want of one operator is a strict xfail naming it, as long
as the daemon lacks it (opd.OpdUnsupported naming the operator; once the operator is in the
daemon's list the case runs as any other). The suite takes a while: ctest runs it as its own
entry, python.models (OPD_MODELS=1); python.client skips it."""
import copy
import os
import warnings

import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
if not os.environ.get("OPD_MODELS"):
    pytest.skip("the model suite runs as its own ctest entry (python.models; set OPD_MODELS=1)",
                allow_module_level=True)

nn = torch.nn
F = nn.functional

import opd  # noqa: E402
import opd.torch  # noqa: E402
from opd import _ops  # noqa: E402
from torch_models import SequenceClassifier, conv_classifier  # noqa: E402

RTOL, ATOL = 1e-3, 1e-4


def _encoder():
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True)
    return SequenceClassifier(nn.TransformerEncoder(layer, 2), 16)


# name: (the model, random weights; its input's shape; classes)
MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(num_classes=10), (1, 3, 64, 64), 10),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(num_classes=10), (1, 3, 64, 64),
                     10),
    "efficientnet_b0": (lambda: torchvision.models.efficientnet_b0(num_classes=10),
                        (1, 3, 64, 64), 10),
    "vit_b_16": (lambda: torchvision.models.vit_b_16(image_size=32, num_classes=10),
                 (1, 3, 32, 32), 10),
    "transformer_encoder": (_encoder, (1, 5, 16), 4),
    "lstm": (lambda: SequenceClassifier(nn.LSTM(8, 16, 2, dropout=0.1), 16, batch_first=False),
             (5, 1, 8), 4),
    "gru": (lambda: SequenceClassifier(nn.GRU(8, 16, 2, batch_first=True, dropout=0.1), 16),
            (1, 5, 8), 4),
    "conv_classifier": (conv_classifier, (1, 3, 16, 16), 10),
}

# the operators a case needs that PyTorch has no decomposition of: (model, mode) -> operator.
# eval mode without autograd takes the fused fast paths of nn.TransformerEncoderLayer and of
# nn.MultiheadAttention (vit_b_16's encoder blocks).
NEEDS = {
    ("transformer_encoder", "eval"): "aten::_transformer_encoder_layer_fwd",
    ("vit_b_16", "eval"): "aten::_native_multi_head_attention",
}


# cases that differ from eager by more than the tolerance allows, and why
IMPRECISE = {
    # the first convolution's weight gradient: its largest error against float64 is 0.0027,
    # eager float32's 0.00049 (every other gradient and parameter is within rtol 1e-3 /
    # atol 1e-4). The daemon's float32 convolution forward is up to 7x further from float64
    # than eager's (a 3x3 convolution of 512 channels at 2x2: 7.5e-5 against 1.1e-5), and
    # the activations of eighteen layers carry it into the backward pass.
    ("resnet18", "step"): "the daemon's float32 convolution is less precise than eager's",
}


def _case(model, mode, way=None):
    op = NEEDS.get((model, mode))
    marks = []
    if op is not None and op not in _ops.builtin_schemas():
        # compile says it first: its graph cannot be the daemon's (OpdFallbackWarning, an
        # error here), naming the operator
        marks.append(pytest.mark.xfail(
            raises=opd.torch.OpdFallbackWarning if way == "compile" else opd.torch.OpdUnsupported,
            strict=True, reason=f"the daemon lacks {op}"))
    if (model, mode) in IMPRECISE:
        marks.append(pytest.mark.xfail(strict=False, reason=IMPRECISE[model, mode]))
    return pytest.param(model, mode, *(() if way is None else (way,)), marks=marks,
                        id="-".join(x for x in (model, mode, way) if x))


_BUILT = {}


def _model(name, mode):
    """A fresh copy of the model (built once: vit_b_16's initialisation takes seconds), in
    ``mode``; train mode with its random operators' probabilities 0."""
    if name not in _BUILT:
        torch.manual_seed(0)
        _BUILT[name] = MODELS[name][0]()
    model = copy.deepcopy(_BUILT[name])
    if mode == "eval":
        return model.eval()
    model.train()
    for m in model.modules():
        if isinstance(m, (nn.modules.dropout._DropoutNd, torchvision.ops.StochasticDepth)):
            m.p = 0.0
        elif isinstance(m, (nn.MultiheadAttention, nn.RNNBase)):
            m.dropout = 0.0
    return model


def _input(name):
    torch.manual_seed(1)
    shape, classes = MODELS[name][1], MODELS[name][2]
    return torch.randn(*shape), torch.randint(0, classes, (1,))


def assert_matches(what, got, expected, reference):
    """got (local) matches eager's expected: within RTOL/ATOL, or its largest error against
    the float64 reference (a callable: computed only when needed) at most twice eager's."""
    assert got.shape == expected.shape and got.dtype == expected.dtype, \
        f"{what}: {tuple(got.shape)} {got.dtype} where eager gives " \
        f"{tuple(expected.shape)} {expected.dtype}"
    try:
        torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
        return
    except AssertionError as e:
        why = str(e).strip().splitlines()[0]
    if not expected.is_floating_point():
        pytest.fail(f"{what}: {why}")
    ref = reference()
    err_got = (got.double() - ref).abs().max().item()
    err_expected = (expected.double() - ref).abs().max().item()
    assert err_got <= 2 * err_expected, \
        f"{what}: {why}; error against float64 {err_got:.3g}, eager float32's {err_expected:.3g}"


def _float64(model):
    return copy.deepcopy(model).double()


@pytest.mark.parametrize("name,mode,way", [
    _case(name, mode, way) for name in MODELS for mode in ("eval", "train")
    for way in ("remote", "compile")])
def test_forward_matches_eager(client, name, mode, way):
    model = _model(name, mode)
    x, _ = _input(name)
    eager = copy.deepcopy(model)  # train mode changes its batch norm buffers
    with torch.set_grad_enabled(mode == "train"):
        expected = eager(x).detach()

    def reference():
        with torch.set_grad_enabled(mode == "train"):
            return _float64(model)(x.double()).detach()

    with warnings.catch_warnings():
        warnings.simplefilter("error", opd.torch.OpdFallbackWarning)  # no CPU fallback
        if way == "remote":
            ours = opd.torch.remote(copy.deepcopy(model), client)
            with torch.set_grad_enabled(mode == "train"):
                got = ours(opd.torch.remote(x, client))
        else:
            f = opd.torch.compile(model, client)
            got = f(x)
    assert isinstance(got, opd.torch.OpdTensor)
    assert_matches("output", got.detach().cpu(), expected, reference)
    if way == "compile":
        assert f.fallback_reason is None  # one graph, one request per call
    if mode == "train":  # the running statistics batch norm updated
        held = dict(ours.named_buffers()) if way == "remote" else dict(zip(f._names, f._params))
        for n, e in eager.named_buffers():
            assert isinstance(held[n], opd.torch.OpdTensor)
            assert_matches(n, held[n].cpu(), e, lambda: pytest.fail(f"buffer {n} differs"))


@pytest.mark.parametrize("name,mode", [_case(name, "step") for name in MODELS])
def test_training_step_matches_eager(client, name, mode):  # mode: "step", for the marks
    model = _model(name, "train")
    x, y = _input(name)

    def step(m, x, y):
        """loss, gradients and parameters after one SGD step"""
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        grads = [p.grad for p in m.parameters()]
        opt.step()
        return loss, grads, list(m.parameters())

    loss_e, grads_e, params_e = step(copy.deepcopy(model), x, y)
    ours = opd.torch.remote(copy.deepcopy(model), client)
    with warnings.catch_warnings():
        warnings.simplefilter("error", opd.torch.OpdFallbackWarning)
        loss, grads, params = step(ours, opd.torch.remote(x, client), opd.torch.remote(y, client))
    ref = []

    def reference(i):
        if not ref:
            ref.append(step(_float64(model), x.double(), y))
        loss64, grads64, params64 = ref[0]
        return [loss64, *grads64, *params64][i].detach()

    names = [n for n, _ in model.named_parameters()]
    got = [loss, *grads, *params]
    expected = [loss_e, *grads_e, *params_e]
    what = ["loss"] + [f"{n}.grad" for n in names] + names
    for i, (w, g, e) in enumerate(zip(what, got, expected)):
        if e is None:
            assert g is None, f"{w}: eager has no gradient"
            continue
        assert isinstance(g, opd.torch.OpdTensor), f"{w}: not held by the daemon"
        assert_matches(w, g.detach().cpu(), e.detach(), lambda i=i: reference(i))
    assert all(p.is_leaf and p.requires_grad for p in params)
