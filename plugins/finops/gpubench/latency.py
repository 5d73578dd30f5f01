"""Request-latency measurement for the serving benchmark, and what is derived from it.

Standalone (stdlib only; the clock and the device synchronisation are passed in, so a test
drives them with a fake clock). Method, per (model, dtype, batch) point:
- `warmup` request batches run first and are discarded (allocator, cuDNN autotune, caches);
- every timed request batch is bracketed by a device synchronisation and a host clock read:
  sync(); t0 = clock(); run(); sync(); t1 = clock(). The synchronisation before t0 keeps work
  queued earlier out of the sample; the one before t1 waits for the GPU to finish, so a sample
  is what a caller waits for, launch overhead included;
- percentiles by the nearest-rank method: Pp = the ceil(p/100 x n)-th smallest sample (an
  observed value, never interpolated). With n < 100 samples P99 is the largest sample.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

PERCENTILE_METHOD = "nearest-rank"


def percentile(samples: Sequence[float], p: float) -> float:
    """Nearest-rank percentile: the ceil(p/100 x n)-th smallest sample (1-based), p in (0, 100]."""
    if not samples:
        raise ValueError("percentile of no samples")
    if not 0 < p <= 100:
        raise ValueError(f"percentile p must be in (0, 100], got {p}")
    ordered = sorted(samples)
    rank = max(math.ceil(p / 100.0 * len(ordered) - 1e-9), 1)
    return ordered[rank - 1]


@dataclass(frozen=True)
class Latencies:
    samples_s: list[float]  # timed request batches only, in run order
    warmup: int  # request batches run and discarded before the first sample
    truncated: bool  # the deadline stopped the point before `iters` samples

    def summary(self) -> dict[str, float]:
        s = self.samples_s
        return {
            "p50_ms": percentile(s, 50) * 1e3,
            "p95_ms": percentile(s, 95) * 1e3,
            "p99_ms": percentile(s, 99) * 1e3,
            "mean_ms": sum(s) / len(s) * 1e3,
            "max_ms": max(s) * 1e3,
            "min_ms": min(s) * 1e3,
        }


def measure_latencies(
    run: Callable[[], object],
    *,
    sync: Callable[[], None],
    warmup: int,
    iters: int,
    min_iters: int = 1,
    time_left: Callable[[], float] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Latencies:
    """Run `warmup` discarded request batches, then time up to `iters` of them (see module doc).

    Stops early once at least `min_iters` samples exist and `time_left()` (seconds) would not
    hold one more request batch of the slowest kind seen so far."""
    if warmup < 0 or iters < 1 or min_iters < 1:
        raise ValueError(f"need warmup >= 0, iters >= 1, min_iters >= 1 (got {warmup}, {iters}, {min_iters})")
    for _ in range(warmup):
        run()
    samples: list[float] = []
    truncated = False
    for _ in range(iters):
        if time_left is not None and len(samples) >= min_iters and time_left() < max(samples):
            truncated = True
            break
        sync()
        t0 = clock()
        run()
        sync()
        samples.append(clock() - t0)
    return Latencies(samples, warmup, truncated)


def point_row(
    model: str,
    dtype: str,
    batch: int,
    lat: Latencies,
    *,
    p99_target_ms: float,
    peak_memory_bytes: int | None,
    tokens_in: int | None = None,
    tokens_out: int | None = None,
) -> dict[str, Any]:
    """One matrix row. Throughput = requests served / time spent serving them (sum of samples);
    the decoder's output tokens/s is that times tokens_out (every request emits tokens_out)."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    if not p99_target_ms > 0:
        raise ValueError(f"P99 target must be > 0 ms, got {p99_target_ms}")
    total = sum(lat.samples_s)
    rps = batch * len(lat.samples_s) / total if total > 0 else float("nan")
    row: dict[str, Any] = {
        "model": model,
        "dtype": dtype,
        "batch": batch,
        "requests_per_s": rps,
        "output_tokens_per_s": rps * tokens_out if tokens_out else None,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        **lat.summary(),
        "samples": len(lat.samples_s),
        "warmup": lat.warmup,
        "truncated": lat.truncated,
        "peak_memory_bytes": peak_memory_bytes,
    }
    row["meets_p99"] = row["p99_ms"] <= p99_target_ms
    return row


def best_under_target(rows: Sequence[dict[str, Any]], p99_target_ms: float) -> dict[str, Any] | None:
    """The row with the highest requests/s whose P99 is within the target (ties: smaller batch)."""
    if not p99_target_ms > 0:
        raise ValueError(f"P99 target must be > 0 ms, got {p99_target_ms}")
    ok = [r for r in rows if r["p99_ms"] <= p99_target_ms and math.isfinite(r["requests_per_s"])]
    if not ok:
        return None
    return max(ok, key=lambda r: (r["requests_per_s"], -r["batch"]))
