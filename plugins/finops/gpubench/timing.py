"""Timing: CUDA events on a GPU (device time, no host jitter), perf_counter on CPU; warm-up,
iteration counts calibrated so each repeat lasts long enough, median of repeats.

Standalone (torch + stdlib only).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch


class BudgetExceeded(RuntimeError):
    """A section ran out of its time budget before producing a single measurement."""


@dataclass
class Deadline:
    """A section's time budget: loops stop early (and say so) instead of overrunning."""

    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds)

    def left(self) -> float:
        return self.at - time.monotonic()

    def passed(self) -> bool:
        return self.left() <= 0


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_iters(fn: Callable[[], object], iters: int, device: torch.device) -> float:
    """Seconds per call of `fn` over `iters` back-to-back calls."""
    if device.type == "cuda":
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000.0 / iters
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t0) / iters


@dataclass
class Measurement:
    median_s: float
    min_s: float
    repeats: int
    iters: int
    truncated: bool  # the deadline cut the repeats short


def measure(
    fn: Callable[[], object],
    device: torch.device,
    *,
    repeats: int,
    target_s: float,
    deadline: Deadline,
    warmup: int = 2,
    max_iters: int = 1000,
) -> Measurement:
    """Warm up, calibrate iterations so one repeat takes ~target_s, return the median."""
    for _ in range(warmup):
        fn()
    sync(device)
    one = max(time_iters(fn, 1, device), 1e-7)
    iters = int(min(max(target_s / one, 1), max_iters))
    samples: list[float] = []
    truncated = False
    for _ in range(repeats):
        if samples and deadline.left() < iters * one * 1.5:
            truncated = True
            break
        samples.append(time_iters(fn, iters, device))
    if not samples:
        raise BudgetExceeded("no repeat fitted in the time budget")
    return Measurement(statistics.median(samples), min(samples), len(samples), iters, truncated)
