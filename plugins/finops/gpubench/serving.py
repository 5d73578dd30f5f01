"""Serving benchmark: request latency and throughput of a ResNet-50-class CNN and of a decoder
with a KV cache, per precision and batch size, in eager PyTorch (no CUDA graphs, no compiler,
no serving engine: a floor for what a tuned server reaches on the same GPU).

Precisions: fp32 on CPU; fp16 / bf16 (weights and activations) on GPU; int8 and fp8 as W8A8
linear layers in the decoder where the GPU has the kernels (int8: torch._int_mm, CUDA compute
capability >= 8.0; fp8 e4m3: torch._scaled_mm, >= 8.9), dynamic per-token (int8) or per-tensor
(fp8) activation scales, attention and norms in bf16. Eager PyTorch has no int8/fp8 convolution,
so the CNN skips those precisions with that reason. Latency method: see latency.py.

Standalone (torch + stdlib only), shipped to fresh instances with the suite.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from finops.gpubench.latency import PERCENTILE_METHOD, best_under_target, measure_latencies, point_row
from finops.gpubench.profiles import Profile
from finops.gpubench.serving_config import ServingSize, size_for, validate_size
from finops.gpubench.timing import Deadline, sync

SEED = 4321
FLOAT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
QUANT = ("int8", "fp8")
FP8_MAX = 448.0  # largest finite float8_e4m3fn


# -- the CNN: ResNet-50 layout (bottleneck blocks 3-4-6-3, expansion 4) ---------------------


class Bottleneck(nn.Module):
    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * 4
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        return F.relu(self.bn3(self.conv3(y)) + self.down(x))


class ResNet(nn.Module):
    def __init__(self, blocks: tuple[int, ...], width: int, classes: int) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1)
        )
        layers: list[nn.Module] = []
        cin = width
        for i, n in enumerate(blocks):
            w = width * 2**i
            for j in range(n):
                layers.append(Bottleneck(cin, w, 2 if j == 0 and i > 0 else 1))
                cin = w * 4
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1), 1))


# -- the decoder, with a preallocated KV cache ----------------------------------------------


class Attention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor], pos: int) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (
            z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in self.qkv(x).split(c, dim=2)
        )
        kc, vc = cache
        kc[:b, :, pos : pos + t] = k
        vc[:b, :, pos : pos + t] = v
        # prefill: causal over the prompt; decode: one query attends to every cached position
        y = F.scaled_dot_product_attention(q, kc[:b, :, : pos + t], vc[:b, :, : pos + t], is_causal=t > 1)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class DecoderBlock(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(d), Attention(d, heads)
        self.ln2, self.fc1, self.fc2 = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor], pos: int) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), cache, pos)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Decoder(nn.Module):
    def __init__(self, s: ServingSize) -> None:
        super().__init__()
        self.size = s
        self.tok = nn.Embedding(s.vocab, s.d_model)
        self.pos = nn.Embedding(s.tokens_in + s.tokens_out, s.d_model)
        self.blocks = nn.ModuleList(DecoderBlock(s.d_model, s.n_heads) for _ in range(s.n_layers))
        self.ln = nn.LayerNorm(s.d_model)
        self.head = nn.Linear(s.d_model, s.vocab, bias=False)

    def new_cache(
        self, batch: int, dtype: torch.dtype, device: torch.device
    ) -> list[tuple[torch.Tensor, ...]]:
        s = self.size
        shape = (batch, s.n_heads, s.tokens_in + s.tokens_out, s.d_model // s.n_heads)
        return [
            (torch.empty(shape, dtype=dtype, device=device), torch.empty(shape, dtype=dtype, device=device))
            for _ in self.blocks
        ]

    def step(self, idx: torch.Tensor, cache: list[Any], pos: int) -> torch.Tensor:
        """Logits of the last position after feeding `idx` (b, t) at positions pos..pos+t-1."""
        x = self.tok(idx) + self.pos(torch.arange(pos, pos + idx.shape[1], device=idx.device))
        for blk, c in zip(self.blocks, cache, strict=True):
            x = blk(x, c, pos)
        return self.head(self.ln(x[:, -1]))

    def generate(self, prompt: torch.Tensor, cache: list[Any]) -> torch.Tensor:
        """Greedy: one prefill over the prompt gives the first output token, then tokens_out - 1
        decode steps of one token each reading the KV cache. Returns (b, tokens_out)."""
        n_in, n_out = self.size.tokens_in, self.size.tokens_out
        nxt = self.step(prompt, cache, 0).argmax(-1, keepdim=True)
        out = [nxt]
        for i in range(n_out - 1):
            nxt = self.step(nxt, cache, n_in + i).argmax(-1, keepdim=True)
            out.append(nxt)
        return torch.cat(out, dim=1)


def decoder_params(s: ServingSize) -> int:
    d = s.d_model
    return (
        s.vocab * d
        + (s.tokens_in + s.tokens_out) * d
        + s.n_layers * (12 * d * d + 13 * d)
        + 2 * d
        + d * s.vocab
    )


# -- W8A8 linear layers -----------------------------------------------------------------------


class QuantLinear(nn.Module):
    """y = x W^T + b with x and W quantised to int8 or fp8 e4m3 for the matrix product.

    int8: per-output-channel weight scales, per-row (token) activation scales, torch._int_mm
    (int32 accumulate; cuBLAS wants more than 16 rows, a multiple of 8: rows are zero-padded to that). fp8:
    per-tensor weight and activation scales, torch._scaled_mm (rows padded to a multiple of 16).
    The weight is stored (out, in) row-major and passed transposed: the column-major operand
    both kernels want."""

    wq: torch.Tensor
    w_scale: torch.Tensor
    bias: torch.Tensor | None

    def __init__(self, lin: nn.Linear, mode: str, out_dtype: torch.dtype) -> None:
        super().__init__()
        if mode not in QUANT:
            raise ValueError(f"unknown quantisation {mode!r}")
        self.mode, self.out_dtype = mode, out_dtype
        w = lin.weight.detach().float()
        if mode == "int8":
            scale = (w.abs().amax(dim=1, keepdim=True) / 127.0).clamp(min=1e-12)
            self.register_buffer("wq", torch.round(w / scale).clamp(-127, 127).to(torch.int8))
            self.register_buffer("w_scale", scale.t().contiguous())  # (1, out)
        else:
            scale = (w.abs().amax() / FP8_MAX).clamp(min=1e-12)
            self.register_buffer("wq", (w / scale).to(torch.float8_e4m3fn))
            self.register_buffer("w_scale", scale.reshape(()).contiguous())
        self.register_buffer("bias", None if lin.bias is None else lin.bias.detach().to(out_dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead, k = x.shape[:-1], x.shape[-1]
        a = x.reshape(-1, k).float()
        m = a.shape[0]
        if self.mode == "int8":
            pad = max(32, -(-m // 8) * 8) - m
            sx = (a.abs().amax(dim=1, keepdim=True) / 127.0).clamp(min=1e-12)
            aq = torch.round(a / sx).clamp(-127, 127).to(torch.int8)
            if pad:
                aq = F.pad(aq, (0, 0, 0, pad))
            y = (torch._int_mm(aq, self.wq.t())[:m].float() * sx * self.w_scale).to(self.out_dtype)
        else:
            pad = -m % 16
            sx = (a.abs().amax() / FP8_MAX).clamp(min=1e-12)
            aq = (a / sx).to(torch.float8_e4m3fn)
            if pad:
                aq = F.pad(aq.view(torch.uint8), (0, 0, 0, pad)).view(torch.float8_e4m3fn)
            out = torch._scaled_mm(
                aq,
                self.wq.t(),
                scale_a=sx,
                scale_b=self.w_scale,
                out_dtype=self.out_dtype,
                use_fast_accum=True,
            )
            y = (out[0] if isinstance(out, tuple) else out)[:m]  # torch < 2.4 also returned amax
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*lead, -1)


def quantise_linears(model: nn.Module, mode: str, out_dtype: torch.dtype) -> int:
    """Replace every nn.Linear (the LM head included) by a QuantLinear in place; returns how many."""
    n = 0
    for name, child in list(model.named_children()):
        if isinstance(child, nn.Linear):
            setattr(model, name, QuantLinear(child, mode, out_dtype))
            n += 1
        else:
            n += quantise_linears(child, mode, out_dtype)
    return n


# -- what runs where ----------------------------------------------------------------------------


def skip_reason(model: str, dtype: str, device: torch.device) -> str | None:
    """Why (model, dtype) cannot run on `device`, or None when it can."""
    if device.type == "cpu":
        return None if dtype == "fp32" else f"{dtype} serving is measured on GPUs only; CPU runs fp32"
    cap = torch.cuda.get_device_capability(device)
    if dtype == "fp32":
        return "fp32 is not a GPU serving precision here (fp16/bf16 serve the same models faster)"
    if dtype == "bf16" and not torch.cuda.is_bf16_supported():
        return "bf16 not supported on this GPU"
    if dtype in QUANT and model != "decoder":
        return f"eager PyTorch has no {dtype} convolution kernels (needs TensorRT or a compiler)"
    if dtype == "int8" and (cap < (8, 0) or not hasattr(torch, "_int_mm")):
        return "int8 matmul (torch._int_mm) needs CUDA compute capability >= 8.0"
    if dtype == "fp8" and (cap < (8, 9) or not hasattr(torch, "_scaled_mm")):
        return f"fp8 matmul (torch._scaled_mm) needs CUDA compute capability >= 8.9, this GPU is {cap[0]}.{cap[1]}"
    return None


def compute_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """int8 / fp8: everything outside the quantised matmuls in bf16 (fp32 on CPU, tests only)."""
    return FLOAT.get(dtype) or (torch.bfloat16 if device.type == "cuda" else torch.float32)


def _build(model: str, dtype: str, s: ServingSize, device: torch.device) -> tuple[nn.Module, dict[str, Any]]:
    torch.manual_seed(SEED)
    compute = compute_dtype(dtype, device)
    if model == "resnet50":
        net: nn.Module = ResNet(s.cnn_blocks, s.cnn_width, s.classes).eval()
        net = net.to(device=device, dtype=compute).to(memory_format=torch.channels_last)  # type: ignore[call-overload]
        info = {
            "blocks": list(s.cnn_blocks),
            "width": s.cnn_width,
            "image_size": s.image_size,
            "classes": s.classes,
            "params": sum(p.numel() for p in net.parameters()),
        }
        return net, info
    if model != "decoder":
        raise ValueError(f"unknown serving model {model!r}")
    dec = Decoder(s).eval().to(device=device, dtype=compute)
    info = {
        "d_model": s.d_model,
        "n_heads": s.n_heads,
        "n_layers": s.n_layers,
        "vocab": s.vocab,
        "tokens_in": s.tokens_in,
        "tokens_out": s.tokens_out,
        "params": decoder_params(s),
    }
    if dtype in QUANT:
        g = torch.Generator(device="cpu").manual_seed(SEED)
        probe = torch.randint(0, s.vocab, (2, min(s.tokens_in, 16)), generator=g).to(device)
        with torch.inference_mode():
            ref = dec.step(probe, dec.new_cache(2, compute, device), 0).float()
            info["quantised_linears"] = quantise_linears(dec, dtype, compute)
            got = dec.step(probe, dec.new_cache(2, compute, device), 0).float()
        # the quantised model must still compute the same function, roughly: logits vs its float self
        info["logits_rel_err_vs_float"] = float((got - ref).norm() / ref.norm().clamp(min=1e-12))
        info["scheme"] = (
            "W8A8 int8, per-channel weight / per-token activation scales"
            if dtype == "int8"
            else "W8A8 fp8 e4m3, per-tensor scales"
        )
    return dec, info


def _request(
    model: str, net: nn.Module, dtype: str, batch: int, s: ServingSize, device: torch.device
) -> Callable[[], object]:
    """One request batch: a closure over inputs made once (synthetic, seeded)."""
    g = torch.Generator(device="cpu").manual_seed(SEED + batch)
    if model == "resnet50":
        img = torch.randn(batch, 3, s.image_size, s.image_size, generator=g)
        x = img.to(device=device, dtype=compute_dtype(dtype, device)).contiguous(
            memory_format=torch.channels_last
        )
        return lambda: net(x)
    assert isinstance(net, Decoder)
    prompt = torch.randint(0, s.vocab, (batch, s.tokens_in), generator=g).to(device)
    cache = net.new_cache(batch, compute_dtype(dtype, device), device)
    return lambda: net.generate(prompt, cache)


def _point(
    model: str,
    dtype: str,
    batch: int,
    s: ServingSize,
    net: nn.Module,
    device: torch.device,
    deadline: Deadline,
) -> dict[str, Any]:
    run = _request(model, net, dtype, batch, s, device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    lat = measure_latencies(
        run,
        sync=lambda: sync(device),
        warmup=s.warmup,
        iters=s.iters,
        min_iters=s.min_iters,
        time_left=deadline.left,
    )
    peak = int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None
    dec = model == "decoder"
    return point_row(
        model,
        dtype,
        batch,
        lat,
        p99_target_ms=s.target_ms(model),
        peak_memory_bytes=peak,
        tokens_in=s.tokens_in if dec else None,
        tokens_out=s.tokens_out if dec else None,
    )


def run_serving(device: torch.device, s: ServingSize, deadline: Deadline) -> dict[str, Any]:
    """Measure every (model, dtype, batch) point the device can run within the deadline and
    return the document's `serving` section (schema.SERVING_SCHEMA)."""
    validate_size(s)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # conv algorithms picked during the discarded warm-up
    rows: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    models: dict[str, Any] = {}
    plan = [(m, d) for m in s.models for d in s.dtypes]
    runnable = [(m, d) for m, d in plan if skip_reason(m, d, device) is None]
    for m, d in plan:
        reason = skip_reason(m, d, device)
        if reason:
            skipped.append({"model": m, "dtype": d, "batch": None, "reason": reason})
    for i, (model, dtype) in enumerate(runnable):
        batches = s.cnn_batches if model == "resnet50" else s.decoder_batches
        share = Deadline.after(max(deadline.left() / (len(runnable) - i), 0.0))
        try:
            net, info = _build(model, dtype, s, device)
        except Exception as e:  # noqa: BLE001 - a precision this torch cannot build: skipped, with why
            skipped.append(
                {"model": model, "dtype": dtype, "batch": None, "reason": f"{type(e).__name__}: {e}"}
            )
            continue
        quant = ("quantised_linears", "scheme", "logits_rel_err_vs_float")
        models.setdefault(model, {k: v for k, v in info.items() if k not in quant})
        if "scheme" in info:
            models[model].setdefault("quantisation", {})[dtype] = {k: info[k] for k in quant}
        with torch.inference_mode():
            for j, batch in enumerate(sorted(batches)):
                if share.passed():
                    skipped.append(
                        {"model": model, "dtype": dtype, "batch": batch, "reason": "time budget spent"}
                    )
                    continue
                point_deadline = Deadline.after(max(share.left() / (len(batches) - j), 0.0))
                try:
                    rows.append(_point(model, dtype, batch, s, net, device, point_deadline))
                    # one line per point in the instance's log: figures survive a run killed later on
                    print("finops.gpubench serving point " + json.dumps(rows[-1]), flush=True)
                except torch.OutOfMemoryError:
                    skipped.append(
                        {"model": model, "dtype": dtype, "batch": batch, "reason": "out of memory"}
                    )
                except Exception as e:  # noqa: BLE001 - a kernel refused a shape: say which, keep the rest
                    skipped.append(
                        {
                            "model": model,
                            "dtype": dtype,
                            "batch": batch,
                            "reason": f"{type(e).__name__}: {str(e)[:300]}",
                        }
                    )
                finally:
                    if device.type == "cuda":
                        torch.cuda.empty_cache()
        del net
    best = []
    for model, dtype in runnable:
        target = s.target_ms(model)
        pick = best_under_target([r for r in rows if (r["model"], r["dtype"]) == (model, dtype)], target)
        best.append(
            {
                "model": model,
                "dtype": dtype,
                "p99_target_ms": target,
                "batch": pick["batch"] if pick else None,
                "requests_per_s": pick["requests_per_s"] if pick else None,
                "output_tokens_per_s": pick["output_tokens_per_s"] if pick else None,
                "p99_ms": pick["p99_ms"] if pick else None,
            }
        )
    return {
        "method": {
            "timer": "host perf_counter between device synchronisations",
            "warmup_discarded": s.warmup,
            "percentiles": PERCENTILE_METHOD,
            "max_samples": s.iters,
            "min_samples": s.min_iters,
            "engine": "eager PyTorch, inference_mode, no CUDA graphs",
        },
        "p99_target_ms": dict(s.p99_target_ms),
        "models": models,
        "rows": rows,
        "best": best,
        "skipped": skipped,
    }


def serving(
    device: torch.device, profile: Profile, deadline: Deadline, overrides: dict[str, Any] | None = None
) -> tuple[list[dict], dict]:
    """Suite section: no flat metrics; the matrix goes to the document's `serving` key (suite.py)."""
    return [], {"serving": run_serving(device, size_for(profile.name, overrides), deadline)}


def summary_lines(doc: dict[str, Any]) -> list[str]:
    """Per (model, dtype): the best batch under the P99 target, for the instance's log."""
    lines = []
    for b in (doc.get("serving") or {}).get("best", []):
        got = (
            f"batch {b['batch']}: {b['requests_per_s']:.4g} req/s, P99 {b['p99_ms']:.4g} ms"
            if b["batch"] is not None
            else "no batch size meets it"
        )
        lines.append(f"  serving {b['model']:<9} {b['dtype']:<5} P99 <= {b['p99_target_ms']:g} ms: {got}")
    return lines
