"""Plain torch.nn modules for overlap.torch's tests (and docs/torch.md):
each with the tensor-parallel plan a user would give parallelize_module.
Sizes are small (they run on 4 host ranks) but keep every sharded dim a
multiple of 4 and the token dim a multiple of the 2 tiles."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel


class MegatronMLP(nn.Module):
    """Linear (colwise) -> GELU -> Linear (rowwise)."""

    def __init__(self, hidden=64, ffn=256):
        super().__init__()
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class LlamaMLP(nn.Module):
    """RMSNorm, then down(SiLU(gate(x)) * up(x)) on [b, s, h]."""

    def __init__(self, hidden=64, ffn=192):
        super().__init__()
        self.norm = nn.RMSNorm(hidden)
        self.gate = nn.Linear(hidden, ffn, bias=False)
        self.up = nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Attention(nn.Module):
    """LayerNorm, q/k/v projections (colwise: each rank its heads), causal
    attention, output projection (rowwise) and the residual."""

    def __init__(self, hidden=64, heads=8, sdpa=True):
        super().__init__()
        self.heads, self.sdpa = heads, sdpa
        self.norm = nn.LayerNorm(hidden)
        self.wq = nn.Linear(hidden, hidden)
        self.wk = nn.Linear(hidden, hidden)
        self.wv = nn.Linear(hidden, hidden)
        self.wo = nn.Linear(hidden, hidden)

    def forward(self, x):
        b, s, h = x.shape
        y = self.norm(x)
        q, k, v = (w(y).view(b, s, self.heads, -1).transpose(1, 2)
                   for w in (self.wq, self.wk, self.wv))
        if self.sdpa:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = q @ k.transpose(-2, -1) / math.sqrt(h // self.heads)
            a = torch.softmax(scores, dim=-1) @ v
        return x + self.wo(a.transpose(1, 2).reshape(b, s, h))


def megatron():
    return MegatronMLP(), (torch.randn(64, 64),), \
        {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()}


def llama():
    return LlamaMLP(), (torch.randn(2, 32, 64),), \
        {"gate": ColwiseParallel(), "up": ColwiseParallel(),
         "down": RowwiseParallel()}


def attention(sdpa=True):
    def build():
        plan = {"wq": "colwise", "wk": "colwise", "wv": "colwise",
                "wo": "rowwise"}
        return Attention(sdpa=sdpa), (torch.randn(2, 16, 64),), plan
    return build


MODULES = {"megatron_mlp": megatron, "llama_mlp": llama,
           "attention_sdpa": attention(True),
           "attention_softmax": attention(False)}
