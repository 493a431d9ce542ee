"""The torch.nn models the bridge tests run in the daemon against eager PyTorch: the issue's
building blocks, an MLP and a GPT-2 style block (attention written with split, view,
transpose, masked_fill, matmul and contiguous, as nanoGPT writes it)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, d=32, heads=4, block=16):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.attn_dropout = nn.Dropout(0.1)
        self.register_buffer("mask", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, d=32, approximate="tanh"):
        super().__init__()
        self.c_fc = nn.Linear(d, 4 * d)
        self.gelu = nn.GELU(approximate=approximate)
        self.c_proj = nn.Linear(4 * d, d)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """A GPT-2 block: pre-LayerNorm attention and MLP with residual connections."""

    def __init__(self, d=32, heads=4, block=16):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, block)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = MLP(d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TinyGPT(nn.Module):
    """Token and position embeddings, one block, the final LayerNorm, the tied LM head."""

    def __init__(self, vocab=50, d=32, block=16):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block, d)
        self.drop = nn.Dropout(0.1)
        self.h = Block(d, 4, block)
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        return self.lm_head(self.ln_f(self.h(x)))


def building_blocks():
    """(name, module, input) for each block the issue lists."""
    torch.manual_seed(0)
    x = torch.randn(2, 8, 32)
    return [
        ("linear", nn.Linear(32, 16), x),
        ("linear_no_bias", nn.Linear(32, 16, bias=False), x[0]),
        ("layer_norm", nn.LayerNorm(32), x),
        ("embedding", nn.Embedding(20, 32), torch.randint(0, 20, (2, 8))),
        ("dropout_eval", nn.Dropout(0.5), x),
        ("gelu", nn.GELU(), x),
        ("gelu_tanh", nn.GELU(approximate="tanh"), x),
        ("silu", nn.SiLU(), x),
        ("relu", nn.ReLU(), x),
        ("softmax", nn.Softmax(dim=-1), x),
        ("log_softmax", nn.LogSoftmax(dim=-1), x),
        ("attention", CausalSelfAttention(), x),
        ("mlp", nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32)), x),
        ("gpt2_block", Block(), x),
        ("tiny_gpt", TinyGPT(), torch.randint(0, 50, (2, 8))),
    ]


class SequenceClassifier(nn.Module):
    """A sequence model (nn.LSTM, nn.GRU, nn.TransformerEncoder) and a linear head on its last
    step's output: logits for a cross-entropy loss."""

    def __init__(self, core, width, classes=4, batch_first=True):
        super().__init__()
        self.core = core
        self.batch_first = batch_first
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        y = self.core(x)
        if isinstance(y, tuple):  # an RNN's (output, state)
            y = y[0]
        return self.head(y[:, -1] if self.batch_first else y[-1])


def conv_classifier(classes=10):
    """A small image classifier of Conv2d, BatchNorm2d, MaxPool2d and Dropout (16x16 inputs)."""
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.5), nn.Linear(16 * 4 * 4, classes))
