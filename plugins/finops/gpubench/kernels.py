"""Micro-benchmarks: dense matmul TFLOPS per dtype, device memory copy bandwidth, and
host <-> device bandwidth (pinned and pageable).

Standalone (torch + stdlib only). Each function returns a list of metric dicts
`{"metric", "dtype", "value", "unit", "details"}` (see schema.py) and never allocates more
than its profile says.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from finops.gpubench.profiles import Profile
from finops.gpubench.timing import Deadline, measure

Metric = dict[str, Any]

TORCH_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def metric(name: str, dtype: str | None, value: float, unit: str, **details: Any) -> Metric:
    return {"metric": name, "dtype": dtype, "value": float(value), "unit": unit, "details": details}


def fp8_supported(device: torch.device) -> bool:
    """fp8 tensor-core matmul (`torch._scaled_mm`) needs compute capability >= 8.9 (Ada, Hopper+)."""
    if device.type != "cuda" or not hasattr(torch, "_scaled_mm"):
        return False
    return torch.cuda.get_device_capability(device) >= (8, 9)


def dtype_skip_reason(dtype: str, device: torch.device) -> str | None:
    if dtype == "tf32" and device.type != "cuda":
        return "tf32 is a CUDA tensor-core mode"
    if dtype == "tf32" and torch.cuda.get_device_capability(device) < (8, 0):
        return "tf32 needs compute capability >= 8.0"
    if dtype == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        return "bf16 not supported on this GPU"
    if dtype == "fp8" and not fp8_supported(device):
        return "fp8 matmul needs CUDA compute capability >= 8.9"
    return None


@contextlib.contextmanager
def fp32_precision(mode: str) -> Iterator[None]:
    """'highest' = true fp32, 'high' = TF32 tensor cores; restored afterwards."""
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(mode)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(old)


def _matmul_fn(dtype: str, m: int, n: int, k: int, device: torch.device):
    gen = torch.Generator(device=device).manual_seed(0)
    if dtype == "fp8":
        a = torch.randn(m, k, device=device, generator=gen).to(torch.float8_e4m3fn)
        # _scaled_mm wants the second operand column-major: build (n, k) row-major, transpose.
        b = torch.randn(n, k, device=device, generator=gen).to(torch.float8_e4m3fn).t()
        one = torch.ones((), device=device, dtype=torch.float32)

        def run_fp8() -> object:
            return torch._scaled_mm(
                a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True
            )

        return run_fp8, (a, b)
    t = TORCH_DTYPES[dtype]
    a = torch.randn(m, k, device=device, dtype=t, generator=gen)
    b = torch.randn(k, n, device=device, dtype=t, generator=gen)
    c = torch.empty(m, n, device=device, dtype=t)

    def run() -> object:
        return torch.matmul(a, b, out=c)

    return run, (a, b, c)


def matmul_tflops(device: torch.device, profile: Profile, deadline: Deadline) -> tuple[list[Metric], dict]:
    """Best median TFLOPS per dtype over the profile's shape sweep (2*M*N*K flops per matmul)."""
    out: list[Metric] = []
    skipped: dict[str, str] = {}
    dtypes = list(profile.matmul_shapes)
    for i, dtype in enumerate(dtypes):
        reason = dtype_skip_reason(dtype, device)
        if reason:
            skipped[dtype] = reason
            continue
        # share what is left of the budget fairly among the dtypes still to run
        share = Deadline.after(max(deadline.left() / (len(dtypes) - i), 0.0))
        sweep: list[dict[str, Any]] = []
        with fp32_precision("high" if dtype == "tf32" else "highest"):
            for m, n, k in profile.matmul_shapes[dtype]:
                if share.passed() and sweep:
                    break
                try:
                    fn, keep = _matmul_fn(dtype, m, n, k, device)
                    res = measure(
                        fn,
                        device,
                        repeats=profile.matmul_repeats,
                        target_s=profile.matmul_target_s,
                        deadline=share,
                    )
                except torch.OutOfMemoryError:
                    sweep.append({"shape": [m, n, k], "error": "out of memory"})
                    continue
                finally:
                    keep = fn = None  # noqa: F841 - free the operands before the next shape
                    if device.type == "cuda":
                        torch.cuda.empty_cache()
                flops = 2.0 * m * n * k
                sweep.append(
                    {
                        "shape": [m, n, k],
                        "tflops": flops / res.median_s / 1e12,
                        "median_s": res.median_s,
                        "best_tflops": flops / res.min_s / 1e12,
                        "repeats": res.repeats,
                        "iters": res.iters,
                        "truncated": res.truncated,
                    }
                )
        ok = [s for s in sweep if "tflops" in s]
        if not ok:
            skipped[dtype] = "no shape completed: " + "; ".join(s.get("error", "") for s in sweep)
            continue
        best = max(ok, key=lambda s: s["tflops"])
        out.append(
            metric("matmul_tflops", dtype, best["tflops"], "TFLOPS", best_shape=best["shape"], sweep=sweep)
        )
    return out, {"skipped": skipped}


def memory_bandwidth(device: torch.device, profile: Profile, deadline: Deadline) -> tuple[list[Metric], dict]:
    """Device copy bandwidth: dst.copy_(src) with buffers far larger than L2; counts read + write."""
    n = profile.copy_bytes
    src = torch.empty(n, dtype=torch.uint8, device=device).fill_(1)
    dst = torch.empty_like(src)
    res = measure(
        lambda: dst.copy_(src), device, repeats=profile.bw_repeats, target_s=0.05, deadline=deadline
    )
    moved = 2 * n
    m = metric(
        "device_copy_bandwidth",
        None,
        moved / res.median_s / 1e9,
        "GB/s",
        buffer_bytes=n,
        bytes_moved_per_copy=moved,
        median_s=res.median_s,
        best_gbps=moved / res.min_s / 1e9,
        repeats=res.repeats,
    )
    return [m], {}


def host_transfer(device: torch.device, profile: Profile, deadline: Deadline) -> tuple[list[Metric], dict]:
    """Host -> device and device -> host bandwidth, from pinned and from pageable host memory."""
    if device.type != "cuda":
        return [], {"skipped": {"all": "host <-> device transfer needs a CUDA device"}}
    n = profile.transfer_bytes
    dev = torch.empty(n, dtype=torch.uint8, device=device)
    out: list[Metric] = []
    for kind in ("pinned", "pageable"):
        host = torch.empty(n, dtype=torch.uint8, pin_memory=(kind == "pinned")).fill_(1)
        nb = kind == "pinned"
        for direction, fn in (
            ("h2d", lambda h=host, b=nb: dev.copy_(h, non_blocking=b)),
            ("d2h", lambda h=host, b=nb: h.copy_(dev, non_blocking=b)),
        ):
            res = measure(fn, device, repeats=profile.bw_repeats, target_s=0.05, deadline=deadline, warmup=1)
            out.append(
                metric(
                    f"{direction}_bandwidth_{kind}",
                    None,
                    n / res.median_s / 1e9,
                    "GB/s",
                    buffer_bytes=n,
                    median_s=res.median_s,
                    repeats=res.repeats,
                )
            )
        del host
    return out, {}
