"""Pure, vectorised cost anomaly detection over many daily series at once (numpy only).

Model, per series and day t (only past days are used, so a day's verdict never changes
when later days arrive):
  expected[t] = median of the same weekday 1..4 weeks back (weekly seasonality; a spike, a
                holiday or a short outage in one of those weeks does not move it), falling back
                to the median of the days seen so far for young series;
  residual    = actual - expected;
  scale[t]    = 1.4826 * median |residual| over the previous 56 days (robust sigma, MAD),
                floored at a small share of expected so flat series do not explode.
A day is anomalous when ALL hold, as in AWS Cost Anomaly Detection's monitor thresholds:
  residual >= abs_floor ($), residual / expected >= pct, residual / scale >= z.
Only increases alert: a drop in spend is not a cost anomaly. Thresholds may differ per
series (arrays broadcast over rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

FACTOR_WEEKS = 8
LEVEL_DAYS = 21
SCALE_WINDOW = 56
MAD_K = 1.4826
MIN_HISTORY = 7


@dataclass(frozen=True)
class Thresholds:
    abs_floor: float = 50.0  # minimum $ above expected
    pct: float = 0.35  # minimum share above expected (0.35 = 35 %)
    z: float = 5.0  # minimum robust z-score
    min_scale_pct: float = 0.03  # scale floor as share of expected


@dataclass
class Detection:
    expected: np.ndarray  # (N, T)
    residual: np.ndarray  # (N, T)
    score: np.ndarray  # (N, T) robust z
    flags: np.ndarray  # (N, T) bool


def nanmedian_last(v: np.ndarray) -> np.ndarray:
    """Median over the last axis ignoring NaN (NaN where all are NaN): one sort plus two
    gathers, far faster than np.nanmedian on many short windows."""
    srt = np.sort(v, axis=-1)  # NaN sorts last
    cnt = (~np.isnan(v)).sum(axis=-1)
    lo = np.maximum((cnt - 1) // 2, 0)[..., None]
    hi = np.maximum(cnt // 2, 0)[..., None]
    hi = np.minimum(hi, v.shape[-1] - 1)
    med = (np.take_along_axis(srt, lo, -1) + np.take_along_axis(srt, hi, -1))[..., 0] / 2
    return np.where(cnt > 0, med, np.nan)


def window_median(a: np.ndarray, start: int, stop: int, chunk: int = 2048) -> np.ndarray:
    """out[:, t] = median of a[:, t+start : t+stop] (offsets relative to t, stop exclusive),
    over the part of the window inside the series; NaN where the window is empty. NaN in `a`
    means "no value"."""
    n, t = a.shape
    w = stop - start
    left, right = max(-start, 0), max(stop - 1, 0)
    a32 = a.astype(np.float32)  # detection needs no more precision; halves the sort work
    padded = np.concatenate([np.full((n, left), np.nan, np.float32), a32, np.full((n, right), np.nan, np.float32)],
                            axis=1)
    out = np.empty((n, t))
    for s in range(0, n, chunk):
        view = sliding_window_view(padded[s : s + chunk], w, axis=1)[:, start + left : start + left + t, :]
        out[s : s + chunk] = nanmedian_last(view)
    return out


def seasonal_expected(x: np.ndarray) -> np.ndarray:
    """Expected cost per day from the past only: robust level x day-of-week factor."""
    n, t = x.shape
    # 1. deseasonalised local level: centred 7-day median (one of each weekday)
    l7 = window_median(x, -3, 4)
    with np.errstate(all="ignore"):
        ratio = np.where(l7 > 0, x / l7, np.nan)
    # 2. weekday factor for day t: median ratio on the same weekday 1..FACTOR_WEEKS weeks back
    #    (those centred windows end at t-4 at the latest: past data only)
    stack = np.full((FACTOR_WEEKS, n, t), np.nan)
    for k in range(1, FACTOR_WEEKS + 1):
        if 7 * k < t:
            stack[k - 1, :, 7 * k :] = ratio[:, : t - 7 * k]
    factor = nanmedian_last(np.moveaxis(stack, 0, -1))
    factor = np.where(np.isfinite(factor) & (factor > 0), factor, 1.0)
    # 3. level: median of the deseasonalised past LEVEL_DAYS days
    deseason = x / factor
    level = window_median(deseason, -LEVEL_DAYS, 0)
    level = np.nan_to_num(level, nan=0.0)
    return level * factor


def weekly_scale(absres: np.ndarray, window: int = SCALE_WINDOW) -> np.ndarray:
    """median |residual| over the `window` days before the start of each day's week block:
    recomputed every 7 days (7x cheaper than daily, still past-only)."""
    n, t = absres.shape
    blocks = np.arange(0, t, 7)
    out = np.zeros((n, t))
    absres = absres.astype(np.float32)
    for b0 in blocks:
        lo = max(0, b0 - window)
        if b0 > lo:
            out[:, b0 : b0 + 7] = np.median(absres[:, lo:b0], axis=1, keepdims=True)
    # the first week has no history: use what each day has seen so far
    for d in range(1, min(7, t)):
        out[:, d] = np.median(absres[:, :d], axis=1)
    return out


def detect(x: np.ndarray, thresholds: Thresholds | None = None, *, abs_floor=None, pct=None, z=None) -> Detection:
    """Flag anomalous days in every row of `x` (N series x T days, costs >= 0 mostly).

    Per-series thresholds: pass arrays of shape (N,) as abs_floor / pct / z."""
    th = thresholds or Thresholds()
    x = np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.0)
    if x.ndim == 1:
        x = x[None, :]
    exp = seasonal_expected(x)
    res = x - exp
    scale = MAD_K * weekly_scale(np.abs(res))
    scale = np.maximum(scale, th.min_scale_pct * np.abs(exp))

    def col(v, default):
        v = default if v is None else v
        return np.asarray(v, dtype=np.float64).reshape(-1, 1) if np.ndim(v) else float(v)

    floor, pct_t, z_t = col(abs_floor, th.abs_floor), col(pct, th.pct), col(z, th.z)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(scale > 0, res / scale, np.where(res > 0, np.inf, 0.0))
        rel = np.where(exp > 0, res / exp, np.where(res > 0, np.inf, 0.0))
    flags = (res >= floor) & (rel >= pct_t) & (score >= z_t)
    flags[:, :MIN_HISTORY] = False  # the window's first days have no past to compare with
    return Detection(expected=exp, residual=res, score=score, flags=flags)


def trailing_mean_baseline(x: np.ndarray, window: int = 30, pct: float = 0.20) -> np.ndarray:
    """Kubecost-style rule for comparison: alert when spend > (1 + pct) x trailing mean."""
    x = np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.0)
    n, t = x.shape
    c = np.concatenate([np.zeros((n, 1)), np.cumsum(x, axis=1)], axis=1)
    idx = np.arange(t)
    lo = np.maximum(idx - window, 0)
    cnt = np.maximum(idx - lo, 1)
    mean = (c[:, idx] - c[:, lo]) / cnt
    flags = x > (1 + pct) * mean
    flags[:, 0] = False
    return flags


def runs(flags_row: np.ndarray, max_gap: int = 2) -> list[tuple[int, int]]:
    """Consecutive flagged days as (first, last) index pairs, bridging gaps <= max_gap days."""
    idx = np.flatnonzero(flags_row)
    if idx.size == 0:
        return []
    out: list[tuple[int, int]] = []
    start = prev = int(idx[0])
    for i in idx[1:]:
        i = int(i)
        if i - prev > max_gap + 1:
            out.append((start, prev))
            start = i
        prev = i
    out.append((start, prev))
    return out
