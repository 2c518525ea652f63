"""PyTorch eager reference for bench/gpu_bench.cpp: the same GPT layer stack (8 layers,
hidden 2048, 16 heads, seq 2048, vocab 50304, micro-batch 8, no dropout, LM head tied
to the token table), bf16 autocast, fused AdamW; once with plain attention (QK^T,
causal mask, softmax, times V) and once with scaled_dot_product_attention (SDPA).

Prints one line per variant: step time (median), tokens/s and MFU against 989 TFLOP/s
with model FLOPs per token = 6 N + 12 L h s. --json FILE writes the figures.

Then one BERT-large encoder layer (hidden 1024, 16 heads, ffn 4096, post-LN, GELU,
dropout 0.1 on the attention probabilities, the attention output and the FFN output, as
DeepLearningExamples' modeling.py builds it: separate q, k, v linears), forward +
backward in bf16 (weights and activations, as that release's model.half() in fp16),
timed alone (no optimizer step) at the shapes of the published layer timings
(cost/published_runs.hpp layer_runs: 96 x 128, 8 x 512):
eager (QK^T, scale, additive mask, softmax, dropout, times V) and with SDPA (no mask:
every token is real). gpu_bench prices the same layers (plan/layer_time.hpp).

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


class BertLayer(nn.Module):
    def __init__(self, h, heads, ffn, p, sdpa):
        super().__init__()
        self.heads, self.p, self.sdpa = heads, p, sdpa
        self.q, self.k, self.v, self.o = (nn.Linear(h, h) for _ in range(4))
        self.fc1, self.fc2 = nn.Linear(h, ffn), nn.Linear(ffn, h)
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.drop = nn.Dropout(p)

    def forward(self, x, mask):
        b, s, h = x.shape

        def split(t):
            return t.view(b, s, self.heads, h // self.heads).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        if self.sdpa:
            c = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p)
        else:
            a = (q @ k.transpose(-1, -2)) / math.sqrt(h // self.heads) + mask
            c = self.drop(a.softmax(-1)) @ v
        x = self.ln1(x + self.drop(self.o(c.transpose(1, 2).reshape(b, s, h))))
        return self.ln2(x + self.drop(self.fc2(F.gelu(self.fc1(x)))))


def bench_layer(b, s, sdpa, steps):
    torch.manual_seed(0)
    bf16 = torch.bfloat16
    layer = BertLayer(1024, 16, 4096, 0.1, sdpa).cuda().to(bf16).train()
    x = torch.randn(b, s, 1024, device="cuda", dtype=bf16, requires_grad=True)
    mask = torch.zeros(b, 1, 1, s, device="cuda", dtype=bf16)
    dy = torch.randn(b, s, 1024, device="cuda", dtype=bf16)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(steps + 3):
        start.record()
        y = layer(x, mask)
        y.backward(dy)
        end.record()
        end.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end) / 1e3)
        layer.zero_grad(set_to_none=True)
        x.grad = None
    name = "sdpa" if sdpa else "eager"
    step = statistics.median(times)
    print(f"torch bert-large layer {b} x {s} {name:5s}: forward + backward {1e3 * step:.3f} ms")
    del layer, x, dy
    torch.cuda.empty_cache()
    return {"kind": "bert-layer", "batch": b, "seq": s, "attention": name, "step_s": step}


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
    out += [bench_layer(b, s, sdpa, 3 * args.steps) for b, s in ((96, 128), (8, 512)) for sdpa in (False, True)]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
