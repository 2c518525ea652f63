"""PyTorch eager reference for bench/gpu_bench.cpp: the same GPT layer stack (8 layers,
hidden 2048, 16 heads, seq 2048, vocab 50304, micro-batch 8, no dropout, LM head tied
to the token table), bf16 autocast, fused AdamW; once with plain attention (QK^T,
causal mask, softmax, times V) and once with scaled_dot_product_attention (SDPA).

Prints one line per variant: step time (median), tokens/s and MFU against 989 TFLOP/s
with model FLOPs per token = 6 N + 12 L h s. --json FILE writes the figures.

    python3 bench/gpt_torch.py [--steps 10] [--layers 8] [--json FILE]
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PEAK = 989e12


class Block(nn.Module):
    def __init__(self, h, heads, sdpa):
        super().__init__()
        self.heads, self.sdpa = heads, sdpa
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.fc1, self.fc2 = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

    def attention(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            a = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
            mask = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
            y = a.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, s, h))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, h, heads, seq, vocab, sdpa):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, h), nn.Parameter(torch.zeros(seq, h))
        self.blocks = nn.ModuleList(Block(h, heads, sdpa) for _ in range(layers))
        self.ln = nn.LayerNorm(h)

    def forward(self, ids, labels):
        x = self.tok(ids) + self.pos
        for blk in self.blocks:
            x = blk(x)
        logits = self.ln(x) @ self.tok.weight.t()
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))


def bench(sdpa, args):
    L, h, heads, s, V, b = args.layers, 2048, 16, 2048, 50304, 8
    torch.manual_seed(0)
    model = GPT(L, h, heads, s, V, sdpa).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    ids = torch.randint(0, V, (b, s), device="cuda")
    labels = torch.randint(0, V, (b, s), device="cuda")
    times = []
    for i in range(args.steps + 2):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(ids, labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    n = sum(p.numel() for p in model.parameters())
    fpt = 6 * n + 12 * L * h * s
    step = statistics.median(times)
    tps = b * s / step
    name = "sdpa" if sdpa else "plain"
    peak = torch.cuda.max_memory_allocated()
    print(f"torch eager {name:5s}: step {1e3 * step:.2f} ms, {tps:.0f} tokens/s, MFU {100 * fpt * tps / PEAK:.1f} % "
          f"(N = {n / 1e6:.1f} M, 6N + 12Lhs = {fpt / 1e9:.3f} GFLOP/token), peak {peak / 2**20:.0f} MiB")
    del model, opt
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return {"attention": name, "step_s": step, "tokens_per_s": tps, "mfu": fpt * tps / PEAK, "peak_bytes": peak}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--json")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("gpt_torch: no CUDA device; skipped")
        raise SystemExit(77)
    out = [bench(False, args), bench(True, args)]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
