"""Serving benchmark shapes per profile, and the command-line overrides of them.

Standalone (stdlib only); shipped with serving.py only to runs that ask for serving.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, replace
from typing import Any

DTYPES = ("fp32", "fp16", "bf16", "int8", "fp8")
MODELS = ("resnet50", "decoder")


@dataclass(frozen=True)
class ServingSize:
    """Serving benchmark shapes (see serving.py): a ResNet-50-class CNN and a decoder with a KV cache.

    dtypes: asked-for precisions (those the device cannot run are skipped with a reason).
    p99_target_ms: latency target per model for one request batch (the decoder's covers prefill
    plus every output token). Each (model, dtype, batch) point runs `warmup` untimed request
    batches, then up to `iters` timed ones (at least `min_iters` unless the budget ends first).
    """

    models: tuple[str, ...] = ("resnet50", "decoder")
    dtypes: tuple[str, ...] = ("fp16", "bf16", "int8", "fp8")
    cnn_batches: tuple[int, ...] = (1, 8, 32, 128)
    decoder_batches: tuple[int, ...] = (1, 8, 32, 64)
    cnn_blocks: tuple[int, int, int, int] = (3, 4, 6, 3)  # ResNet-50
    cnn_width: int = 64
    image_size: int = 224
    classes: int = 1000
    d_model: int = 1024
    n_heads: int = 16
    n_layers: int = 8
    vocab: int = 32000
    tokens_in: int = 512
    tokens_out: int = 128
    p99_target_ms: tuple[tuple[str, float], ...] = (("resnet50", 100.0), ("decoder", 2000.0))
    warmup: int = 5
    min_iters: int = 20
    iters: int = 200

    def target_ms(self, model: str) -> float:
        return dict(self.p99_target_ms)[model]


SIZES = {
    "cuda-full": ServingSize(warmup=3, min_iters=15),
    "cuda-quick": ServingSize(
        cnn_batches=(1, 16),
        decoder_batches=(1, 16),
        d_model=512,
        n_heads=8,
        n_layers=4,
        vocab=8192,
        tokens_in=128,
        tokens_out=32,
        warmup=3,
        min_iters=10,
        iters=50,
    ),
    # fp32 only on CPU: fp16/bf16 and the int8/fp8 tensor-core paths are GPU serving precisions
    "cpu": ServingSize(
        dtypes=("fp32",),
        cnn_batches=(1, 4),
        decoder_batches=(1, 4),
        cnn_blocks=(1, 1, 1, 1),
        cnn_width=8,
        image_size=32,
        classes=10,
        d_model=64,
        n_heads=4,
        n_layers=2,
        vocab=128,
        tokens_in=8,
        tokens_out=4,
        warmup=2,
        min_iters=5,
        iters=30,
    ),
}


def validate_size(s: ServingSize) -> ServingSize:
    """Refuse shapes that cannot describe a serving run (before any model is built)."""
    for name in ("cnn_batches", "decoder_batches"):
        bad = [b for b in getattr(s, name) if isinstance(b, bool) or not isinstance(b, int) or b < 1]
        if bad or not getattr(s, name):
            raise ValueError(f"{name}: batch sizes must be integers >= 1, got {list(getattr(s, name))}")
    for model, ms in s.p99_target_ms:
        if not (isinstance(ms, int | float) and math.isfinite(ms) and ms > 0):
            raise ValueError(f"P99 target for {model} must be > 0 ms, got {ms}")
    unknown = [m for m in s.models if m not in MODELS]
    if unknown:
        raise ValueError(f"unknown serving models {unknown}; choose from {list(MODELS)}")
    missing = [m for m in s.models if m not in dict(s.p99_target_ms)]
    if missing:
        raise ValueError(f"no P99 target for {missing}")
    if s.tokens_in < 1 or s.tokens_out < 1:
        raise ValueError(f"tokens_in and tokens_out must be >= 1, got {s.tokens_in}, {s.tokens_out}")
    if s.d_model % s.n_heads:
        raise ValueError(f"d_model {s.d_model} is not a multiple of n_heads {s.n_heads}")
    unknown = [d for d in s.dtypes if d not in DTYPES]
    if unknown:
        raise ValueError(f"unknown serving dtypes {unknown}; choose from {list(DTYPES)}")
    if s.warmup < 0 or s.min_iters < 1 or s.iters < s.min_iters:
        raise ValueError(
            f"need warmup >= 0 and 1 <= min_iters <= iters, got {s.warmup}, {s.min_iters}, {s.iters}"
        )
    return s


def size_for(profile: str, overrides: dict[str, Any] | None = None) -> ServingSize:
    """The profile's serving shapes with `overrides` (ServingSize fields) applied, validated."""
    return validate_size(replace(SIZES.get(profile, SIZES["cpu"]), **(overrides or {})))


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"want a comma list of integers, got {text!r}") from None


def parse_targets(pairs: list[str]) -> tuple[tuple[str, float], ...]:
    """`100` (every model) or `resnet50=100`, `decoder=1500`, applied in order over the defaults."""
    out = dict(ServingSize().p99_target_ms)
    for p in pairs:
        model, sep, ms = p.rpartition("=")
        try:
            value = float(ms)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--p99-ms wants MS or MODEL=MS, got {p!r}") from None
        for m in [model] if sep else list(out):
            out[m] = value
    return tuple(out.items())


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    """ServingSize fields the command line replaces (only those given); see __main__."""
    out: dict[str, Any] = {}
    if args.p99_ms:
        out["p99_target_ms"] = parse_targets(args.p99_ms)
    if args.batches:
        out["cnn_batches"] = out["decoder_batches"] = _ints(args.batches)
    if args.serving_dtypes:
        out["dtypes"] = tuple(d for d in args.serving_dtypes.split(",") if d)
    if args.serving_models:
        out["models"] = tuple(m for m in args.serving_models.split(",") if m)
    if args.tokens_in is not None:
        out["tokens_in"] = args.tokens_in
    if args.tokens_out is not None:
        out["tokens_out"] = args.tokens_out
    return out
