"""Random torch.nn modules with a tensor-parallel plan, for
test_torch_differential.py (in the spirit of jax_programs.py): a residual
stack of blocks drawn from a seed — MLPs (plain or gated, an activation
drawn, biases or not), attention blocks (heads drawn, sdpa or its softmax
form, causal or not), LayerNorm / RMSNorm, elementwise scalings — on
[tokens, h] or [b, s, h], in f32 or bf16. Every Linear that is planned is
planned as a user would: the first of a pair colwise, the second rowwise.
"""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "relu": F.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
}


class MLP(nn.Module):
    def __init__(self, h, f, act, gated, bias):
        super().__init__()
        self.act, self.gated = act, gated
        self.up = nn.Linear(h, f, bias=bias)
        if gated:
            self.gate = nn.Linear(h, f, bias=bias)
        self.down = nn.Linear(f, h, bias=bias)

    def forward(self, x):
        y = ACTIVATIONS[self.act](self.up(x))
        if self.gated:
            y = y * self.gate(x)
        return self.down(y)

    def plan(self, prefix):
        p = {prefix + "up": "colwise", prefix + "down": "rowwise"}
        if self.gated:
            p[prefix + "gate"] = "colwise"
        return p


class Attention(nn.Module):
    def __init__(self, h, heads, sdpa, causal):
        super().__init__()
        self.heads, self.sdpa, self.causal = heads, sdpa, causal
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(h, h)
                                              for _ in range(4))

    def forward(self, x):
        x3 = x.unsqueeze(0) if x.dim() == 2 else x   # [tokens, h]: b = 1
        b, s, h = x3.shape
        q, k, v = (w(x3).view(b, s, self.heads, -1).transpose(1, 2)
                   for w in (self.wq, self.wk, self.wv))
        if self.sdpa:
            a = F.scaled_dot_product_attention(q, k, v,
                                               is_causal=self.causal)
        else:
            scores = q @ k.transpose(-2, -1) / math.sqrt(h // self.heads)
            a = torch.softmax(scores, dim=-1) @ v
        y = self.wo(a.transpose(1, 2).reshape(b, s, h))
        return y.reshape(x.shape)

    def plan(self, prefix):
        p = {prefix + n: "colwise" for n in ("wq", "wk", "wv")}
        p[prefix + "wo"] = "rowwise"
        return p


class Scale(nn.Module):
    def __init__(self, a, c):
        super().__init__()
        self.a, self.c = a, c

    def forward(self, x):
        return (x * self.a - self.c) / 2


class Stack(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x) if not isinstance(block, Scale) else block(x)
        return x


def make(seed, ranks=4):
    """(module, args, plan, description) of seed `seed`."""
    rng = np.random.default_rng(seed)
    h = int(rng.choice([32, 64]))
    blocks, plan, words = [], {}, []
    for i in range(int(rng.integers(2, 5))):
        kind = rng.choice(["mlp", "mlp", "attention", "norm", "scale"])
        prefix = f"blocks.{i}."
        if kind == "mlp":
            f = int(rng.choice([2, 3, 4])) * h
            act = str(rng.choice(sorted(ACTIVATIONS)))
            gated, bias = bool(rng.integers(2)), bool(rng.integers(2))
            block = MLP(h, f, act, gated, bias)
            words.append(f"mlp({act}{', gated' if gated else ''}"
                         f"{', bias' if bias else ''}, f={f})")
        elif kind == "attention":
            heads = int(rng.choice([ranks, 2 * ranks]))
            sdpa, causal = bool(rng.integers(2)), bool(rng.integers(2))
            block = Attention(h, heads, sdpa, causal)
            words.append(f"attention(heads={heads}, "
                         f"{'sdpa' if sdpa else 'softmax'}"
                         f"{', causal' if causal and sdpa else ''})")
            if not sdpa:
                block.causal = False
        elif kind == "norm":
            block = nn.LayerNorm(h) if rng.integers(2) else nn.RMSNorm(h)
            words.append(type(block).__name__)
        else:
            block = Scale(float(rng.uniform(0.5, 2)),
                          float(rng.uniform(-1, 1)))
            words.append("scale")
        if hasattr(block, "plan"):
            plan.update(block.plan(prefix))
        blocks.append(block)
    dtype = torch.bfloat16 if rng.integers(3) == 0 else torch.float32
    shape = ((int(rng.choice([32, 64])), h) if rng.integers(2)
             else (2, int(rng.choice([8, 16])), h))
    torch.manual_seed(seed)
    module = Stack(blocks).to(dtype)
    # Weights scaled so that a stack of blocks stays in range.
    with torch.no_grad():
        for p in module.parameters():
            if p.dim() == 2:
                p.mul_(0.5)
    x = torch.randn(shape).to(dtype)
    what = (f"seed {seed}: {' -> '.join(words)} on {list(shape)} "
            f"{str(dtype).replace('torch.', '')}")
    return module, (x,), plan, what
