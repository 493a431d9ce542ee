"""opd.torch: PyTorch code run by the opd daemon.

    import torch, opd, opd.torch
    c = opd.connect("tcp://127.0.0.1:7470")
    model = opd.torch.remote(torch.nn.Linear(4, 2).eval(), c)   # parameters uploaded once
    y = model(opd.torch.remote(torch.randn(3, 4), c))          # runs in the daemon
    print(y, y.cpu())

remote(obj, client): tensors and modules held by the daemon (OpdTensor);
compile(fn_or_module, client): traced with make_fx and run in the daemon;
cpu_fallback(): operators opd lacks run on the local CPU with a warning.
"""
from ._compile import compile
from ._tensor import OpdFallbackWarning, OpdTensor, OpdUnsupported, cpu_fallback, remote

__all__ = ["remote", "compile", "OpdTensor", "cpu_fallback", "OpdFallbackWarning",
           "OpdUnsupported"]
