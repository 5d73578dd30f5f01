"""Training throughput of a GPT-style decoder stack on synthetic data, in fp32 and with
automatic mixed precision (bf16 autocast; fp16 autocast + GradScaler), from the SAME seed,
so the AMP loss curve can be checked against the fp32 one.

fp32 means true fp32 matmuls (`float32_matmul_precision='highest'`, PyTorch's default), so
the AMP speed-up is against real single precision. Standalone (torch + stdlib only).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from finops.gpubench.kernels import Metric, fp32_precision, metric
from finops.gpubench.profiles import ModelSize, Profile
from finops.gpubench.timing import Deadline, sync

SEED = 1234
# AMP may drift from fp32 by rounding, not by diverging: mean relative loss gap bound.
LOSS_REL_TOLERANCE = 0.05


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, s: ModelSize) -> None:
        super().__init__()
        self.tok = nn.Embedding(s.vocab, s.d_model)
        self.pos = nn.Embedding(s.seq_len, s.d_model)
        self.blocks = nn.ModuleList(Block(s.d_model, s.n_heads) for _ in range(s.n_layers))
        self.ln = nn.LayerNorm(s.d_model)
        self.head = nn.Linear(s.d_model, s.vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def param_count(s: ModelSize) -> int:
    d, layers = s.d_model, s.n_layers
    per_block = 12 * d * d + 13 * d  # qkv + proj + mlp weights and biases + 2 layer norms
    return s.vocab * d + s.seq_len * d + layers * per_block + 2 * d + d * s.vocab


def synthetic_batches(s: ModelSize, n: int, device: torch.device) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Learnable synthetic text: arithmetic sequences mod vocab, so the loss really falls."""
    g = torch.Generator().manual_seed(SEED)
    out = []
    for _ in range(n):
        start = torch.randint(0, s.vocab, (s.batch, 1), generator=g)
        stride = torch.randint(1, 8, (s.batch, 1), generator=g)
        seq = (start + stride * torch.arange(s.seq_len + 1)) % s.vocab
        out.append((seq[:, :-1].to(device), seq[:, 1:].to(device)))
    return out


def amp_modes(device: torch.device) -> list[str]:
    if device.type == "cuda":
        return (["amp_bf16"] if torch.cuda.is_bf16_supported() else []) + ["amp_fp16"]
    return ["amp_bf16", "amp_fp16"]


def _run_mode(
    mode: str, s: ModelSize, device: torch.device, profile: Profile, deadline: Deadline
) -> dict[str, Any]:
    torch.manual_seed(SEED)
    model = GPT(s).to(device)
    fused = device.type == "cuda"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=fused)
    amp_dtype = {"amp_bf16": torch.bfloat16, "amp_fp16": torch.float16}.get(mode)
    scaler = torch.amp.GradScaler(device.type, enabled=(mode == "amp_fp16"))
    n_steps = profile.train_warmup_steps + profile.train_steps
    batches = synthetic_batches(s, min(n_steps, 8), device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    losses: list[float] = []
    times: list[float] = []
    truncated = False
    with fp32_precision("highest"):
        for step in range(n_steps):
            if step >= profile.train_warmup_steps + 1 and deadline.passed():
                truncated = True
                break
            x, y = batches[step % len(batches)]
            sync(device)
            t0 = time.perf_counter()
            with torch.autocast(device.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
                logits = model(x)
                loss = F.cross_entropy(logits.float().view(-1, s.vocab), y.reshape(-1))
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            sync(device)
            dt = time.perf_counter() - t0
            losses.append(float(loss.detach()))
            if step >= profile.train_warmup_steps:
                times.append(dt)
    if not times:  # the budget ended inside warm-up: time the warm-up steps rather than nothing
        times = [float("nan")]
    step_s = statistics.median(times)
    peak = int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None
    del model, opt
    return {
        "mode": mode,
        "losses": losses,
        "step_s": step_s,
        "timed_steps": len(times),
        "peak_memory_bytes": peak,
        "truncated": truncated,
    }


def _run_with_smaller_batch_on_oom(
    mode: str, s: ModelSize, device: torch.device, profile: Profile, deadline: Deadline
) -> dict[str, Any] | None:
    """Smaller GPUs: halve the batch (up to 3 times) instead of failing the section."""
    for _ in range(4):
        try:
            return _run_mode(mode, s, device, profile, deadline) | {"size": s}
        except torch.OutOfMemoryError:
            if device.type == "cuda":
                torch.cuda.empty_cache()
            if s.batch == 1:
                break
            s = replace(s, batch=max(s.batch // 2, 1))
    return None


def loss_gap(ref: list[float], other: list[float]) -> float:
    """Mean relative gap |other - ref| / ref over the steps both runs completed."""
    n = min(len(ref), len(other))
    if n == 0:
        return float("nan")
    return statistics.fmean(abs(o - r) / abs(r) for r, o in zip(ref[:n], other[:n], strict=True) if r)


def training(device: torch.device, profile: Profile, deadline: Deadline) -> tuple[list[Metric], dict]:
    """fp32 first (the reference), then each AMP mode; metrics per mode plus AMP speed-up and loss check."""
    s = profile.model
    modes = ["fp32", *amp_modes(device)]
    tokens = s.batch * s.seq_len
    runs: dict[str, dict[str, Any]] = {}
    out: list[Metric] = []
    for i, mode in enumerate(modes):
        if i and deadline.passed():
            break
        share = Deadline.after(max(deadline.left() / (len(modes) - i), 0.0))
        r = _run_with_smaller_batch_on_oom(mode, s, device, profile, share)
        if r is None:
            continue
        s = r.pop("size")  # later modes use the batch that fitted, so the comparison stays fair
        tokens = s.batch * s.seq_len
        runs[mode] = r
        if r["step_s"] != r["step_s"]:  # nan: no timed step
            continue
        sps = s.batch / r["step_s"]
        common = {
            "batch": s.batch,
            "seq_len": s.seq_len,
            "params": param_count(s),
            "timed_steps": r["timed_steps"],
            "truncated": r["truncated"],
        }
        out.append(
            metric("train_samples_per_s", mode, sps, "samples/s", tokens_per_s=tokens / r["step_s"], **common)
        )
        out.append(metric("train_step_time", mode, r["step_s"] * 1000.0, "ms", **common))
        if r["peak_memory_bytes"] is not None:
            out.append(metric("train_peak_memory", mode, r["peak_memory_bytes"], "bytes"))
    checks: dict[str, Any] = {}
    ref = runs.get("fp32")
    for mode, r in runs.items():
        if mode == "fp32" or ref is None:
            continue
        gap = loss_gap(ref["losses"], r["losses"])
        ok = gap <= LOSS_REL_TOLERANCE
        checks[mode] = {"loss_rel_gap": gap, "tolerance": LOSS_REL_TOLERANCE, "ok": ok}
        out.append(metric("train_loss_rel_gap", mode, gap, "ratio", tolerance=LOSS_REL_TOLERANCE, ok=ok))
        if ref["step_s"] == ref["step_s"] and r["step_s"] == r["step_s"]:
            out.append(metric("train_amp_speedup", mode, ref["step_s"] / r["step_s"], "x", vs="fp32"))
    model = {
        "d_model": s.d_model,
        "n_heads": s.n_heads,
        "n_layers": s.n_layers,
        "seq_len": s.seq_len,
        "batch": s.batch,
        "vocab": s.vocab,
        "params": param_count(s),
    }
    losses = {m: r["losses"] for m, r in runs.items()}
    return out, {"model": model, "losses": losses, "loss_checks": checks, "seed": SEED}
