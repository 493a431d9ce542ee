"""opd.torch.compile (placeholder until the next layer)."""


def compile(fn_or_module, client):
    raise NotImplementedError("opd.torch.compile")
