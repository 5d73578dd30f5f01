"""Pure, vectorised cost anomaly detection over many daily series at once (numpy only).

Why this shape: cost series are multiplicative (noise, weekday shape and growth scale with the
level), heavy-tailed when small, and change level for good (a new cluster, a launch). So the
detector works on y = log(cost + c), with c a quarter of the $ floor: far below the floor,
relative swings shrink, so a $2 service that triples is not news. Per series and day t, from
days before t only (a day's verdict never changes when later days arrive):

  profile p[t]  weekday effect: median, over the same weekday 1..8 weeks back, of y minus its
                centred 7-day median (a spike, a holiday or an outage in one week moves nothing);
  level L       robust exponential smoothing of d = y - p: each day moves L by alpha x the
                residual clipped at +-clip sigmas, so a spike barely moves it and a trend is
                followed (growth of 80 % a year is ~0.2 % a day);
  sigma         dispersion of the log residuals: an exponentially weighted mean of |residual|
                clipped at 3 sigma (a log-scale MAD that forgets slowly);
  z             (d[t] - L) / sigma, compared with z raised by (tail rate) ** tail_gamma, where
                the tail rate is how often the noise went beyond 3 sigma on the OTHER side
                (Student-t-like noise gets a higher bar; the events a side detects never
                raise their own bar).

A day is flagged UP when z passes, the $ excess >= abs_floor and the excess >= pct of expected
(AWS Cost Anomaly Detection's "$ AND %" monitor thresholds, plus the z-score), and DOWN (an
outage) when -z passes, the $ shortfall >= abs_floor and spend fell by >= drop_pct. Expected
is measured against both the current level and the level `lag` days ago (the higher one for UP,
the lower one for DOWN): coming back from a holiday lull or an accepted spike is not news.
A slow test catches ramps the level has been following: the median of the last five days
against the level `lag` days ago, with the same thresholds.

New normal: after `accept` consecutive days beyond `accept_z` sigmas in one direction, or a
slow alert (a level shift, a ramp, a launch, a lull), L jumps to the recent median and, for
`settle` days, follows the series quickly and alerts at most once, against the level before
the change. A shift therefore alerts on its first days, as one run, not for weeks after.
Drops shared by many series on the same day (a holiday, a calendar lull) are not outages: with
>= COMMON_MIN_SERIES series, a day where >= COMMON_SHARE of them (and >= 3) fell by a third or
more raises no DOWN flag. A lull on a monitor of fewer series alerts only past drop_pct.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

PROFILE_WEEKS = 8
MIN_HISTORY = 14  # no verdict before two weeks of history (L and sigma start from them)
MIN_SIGMA = 0.02  # log units: a flat series still needs a ~2 % move per sigma
MAD_K = 1.4826
NORMAL_EXCEED = 0.00135  # P(z < -3) = P(z > 3) for normal noise
TAIL_LAMBDA = 0.01  # the exceedance rate forgets over ~100 days
COMMON_MIN_SERIES = 5  # a monitor of 5 series where 3 fell on the same day: a holiday
COMMON_SHARE = 0.02
COMMON_MIN_FELL = 3  # and at least this many series: one outage is not a holiday
FELL = float(np.log(2 / 3))  # "fell by a third or more", on the log scale


@dataclass(frozen=True)
class Model:
    """The detector's internal constants. alpha, accept, settle, slow_sd and offset (and the
    z / drop_pct defaults) come from bench/anomaly.py --tune on split A; the rest are design
    values (tail_gamma: a tuning set without heavy tails could only switch that guard off)."""

    alpha: float = 0.1  # level smoothing per day
    clip: float = 2.0  # a day moves the level by at most clip sigmas
    lam: float = 0.05  # sigma smoothing per day
    accept: int = 4  # consecutive same-sign days beyond accept_z that make a new level
    accept_z: float = 3.0
    settle: int = 7  # days after a new level: follow quickly, alert at most once (vs the old level)
    alpha_settle: float = 0.5  # level smoothing while settling: follows a ramp's remainder
    lam_settle: float = 0.3  # sigma smoothing while settling: learns the new level's noise
    lag: int = 21  # the older level that expected is also measured against
    slow_sd: float = 0.5  # noise of the 5-day median vs the older level, in sigmas (0.56 for normal noise)
    tail_gamma: float = 0.25  # z is raised by (exceedance rate / normal) ** tail_gamma
    offset: float = 0.25  # c = offset x abs_floor in log(cost + c)


@dataclass(frozen=True)
class Thresholds:
    abs_floor: float = 50.0  # minimum $ above (or below) expected
    pct: float = 0.35  # minimum share above expected (0.35 = 35 %)
    z: float = 5.0  # minimum robust z-score on the log scale
    drop_pct: float = 0.6  # minimum share below expected for an outage (0.6 = spend fell 60 %)


@dataclass
class Detection:
    expected: np.ndarray  # (N, T) $ expected for the day
    residual: np.ndarray  # (N, T) actual - expected ($)
    score: np.ndarray  # (N, T) robust z on the log scale (negative for drops)
    flags: np.ndarray  # (N, T) bool: anomalous day (up or down)
    direction: np.ndarray  # (N, T) int8: +1 up, -1 down, 0 none


def nanmedian_last(v: np.ndarray) -> np.ndarray:
    """Median over the last axis ignoring NaN (NaN where all are NaN): one sort plus two
    gathers, far faster than np.nanmedian on many short windows."""
    srt = np.sort(v, axis=-1)  # NaN sorts last
    k = v.shape[-1]
    if k and not np.isnan(srt[..., -1]).any():  # no NaN anywhere: plain slices, no gathers
        return (srt[..., (k - 1) // 2] + srt[..., k // 2]) / 2
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
    padded = np.concatenate(
        [np.full((n, left), np.nan, np.float32), a32, np.full((n, right), np.nan, np.float32)], axis=1
    )
    out = np.empty((n, t))
    # windows that reach past an edge hold padding NaN; the others are plain when `a` is
    # (nanmedian_last then skips its gathers): median them apart
    lo, hi = max(-start, 0), max(min(t, t - stop + 1), 0)
    parts = [(0, min(lo, t)), (min(lo, t), max(hi, min(lo, t))), (max(hi, min(lo, t)), t)]
    for s in range(0, n, chunk):
        view = sliding_window_view(padded[s : s + chunk], w, axis=1)[:, start + left : start + left + t, :]
        for c0, c1 in parts:
            if c1 > c0:
                out[s : s + chunk, c0:c1] = nanmedian_last(view[:, c0:c1])
    return out


def weekday_profile(y: np.ndarray) -> np.ndarray:
    """p[:, t]: the weekday effect for day t on the log scale, from days before t only."""
    n, t = y.shape
    ratio = y - window_median(y, -3, 4)  # centred: day t-7k uses days up to t-7k+3 < t
    stack = np.full((n, t, PROFILE_WEEKS), np.nan, np.float32)
    for k in range(1, PROFILE_WEEKS + 1):
        if 7 * k < t:
            stack[:, 7 * k :, k - 1] = ratio[:, : t - 7 * k]
    full = min(7 * PROFILE_WEEKS, t)  # from here on every week is there (no NaN, no gathers)
    p = np.concatenate([nanmedian_last(stack[:, :full]), nanmedian_last(stack[:, full:])], axis=1)
    return np.nan_to_num(p, nan=0.0)


def _col(v: float | np.ndarray, n: int) -> np.ndarray:
    if np.ndim(v):
        return np.broadcast_to(np.asarray(v, dtype=np.float64).reshape(-1), (n,)).copy()
    return np.full(n, float(v))


def detect(
    x: np.ndarray,
    thresholds: Thresholds | None = None,
    *,
    abs_floor=None,
    pct=None,
    z=None,
    drop_pct=None,
    model: Model | None = None,
) -> Detection:
    """Flag anomalous days in every row of `x` (N series x T days, costs >= 0).

    Per-series thresholds: pass arrays of shape (N,) as abs_floor / pct / z / drop_pct."""
    th = thresholds or Thresholds()
    m = model or Model()
    x = np.clip(np.asarray(x, dtype=np.float64), 0, None)  # NaN stays: a day without data, never flagged
    if x.ndim == 1:
        x = x[None, :]
    n, t = x.shape
    if t == 0:
        return Detection(x.copy(), x.copy(), x.copy(), np.zeros(x.shape, bool), np.zeros(x.shape, np.int8))
    floor = _col(th.abs_floor if abs_floor is None else abs_floor, n)
    pct_t = _col(th.pct if pct is None else pct, n)
    z_t = _col(th.z if z is None else z, n)
    drop_t = _col(th.drop_pct if drop_pct is None else drop_pct, n)
    c = np.maximum(floor * m.offset, 0.01)
    y = np.log(x + c[:, None])
    p = weekday_profile(y)
    d = y - p
    d5 = window_median(d, -4, 1)  # median of the last five days: a ramp's level, not one day's noise
    # the day loop reads one day of every series at a time: (T, N) rows are contiguous
    X, D, P, D5 = (np.ascontiguousarray(a.T) for a in (x, d, p, d5))
    expected = np.zeros((t, n))
    score = np.zeros((t, n))
    direction = np.zeros((t, n), np.int8)
    h = min(MIN_HISTORY, t)
    with warnings.catch_warnings():  # a series without data in its first days starts at zero spend
        warnings.simplefilter("ignore", RuntimeWarning)
        level = np.where(np.isfinite(D[:h]).any(axis=0), np.nanmedian(D[:h], axis=0), np.log(c))
        mad = np.nan_to_num(np.nanmedian(np.abs(D[:h] - level), axis=0), nan=0.0)
    sigma = np.maximum(MAD_K * mad, MIN_SIGMA)
    hist = np.empty((t, n))
    hist[:h] = level
    up_run = np.zeros(n, np.int64)
    dn_run = np.zeros(n, np.int64)
    settle_until = np.zeros(n, np.int64)
    anchor = level.copy()  # the level before the current new-level episode
    told = np.zeros(n, bool)  # the current episode has alerted already
    last_accept = np.full(n, -m.lag - m.settle - 1, np.int64)
    tail_lo = np.full(n, NORMAL_EXCEED)  # how often the noise falls / rises beyond 3 sigmas
    tail_hi = np.full(n, NORMAL_EXCEED)
    common = n >= COMMON_MIN_SERIES
    common_min = max(COMMON_MIN_FELL, COMMON_SHARE * n)
    for i in range(h, t):
        calm = settle_until <= i
        old = hist[max(i - m.lag, 0)]
        di, pi, xi = D[i], P[i], X[i]
        seen = np.isfinite(di)
        di = np.where(seen, di, level)  # a day without data: no residual, no flag
        # heavy tails raise the bar, each side measured on the OTHER side: the events a side
        # detects never raise their own bar (log-scale noise is symmetric enough)
        zk_up = z_t * np.maximum(tail_lo / NORMAL_EXCEED, 1.0) ** m.tail_gamma
        zk_dn = z_t * np.maximum(tail_hi / NORMAL_EXCEED, 1.0) ** m.tail_gamma
        # calm: against both the current level and the level LAG days ago (the higher one for
        # up, the lower for down); settling: against the level before the episode, once
        r = di - level
        zz = r / sigma
        ref_hi = np.where(calm, np.maximum(level, old), anchor)
        ref_lo = np.where(calm, np.minimum(level, old), anchor)
        e_up = np.exp(ref_hi + pi) - c
        e_dn = np.exp(ref_lo + pi) - c
        ok_up = np.where(calm, zz >= zk_up, ~told) & ((di - ref_hi) / sigma >= zk_up)
        below = di - ref_lo
        ok_dn = np.where(calm, zz <= -zk_dn, ~told) & (below / sigma <= -zk_dn)
        up = ok_up & (xi - e_up >= floor) & (xi - e_up >= pct_t * e_up)
        dn = ok_dn & (e_dn - xi >= floor) & (e_dn - xi >= drop_t * e_dn)
        # slow test: a ramp the level has been following, against a level no accepted
        # episode has replaced (LAG + SETTLE days)
        slow_ok = calm & (i - last_accept > m.lag + m.settle)
        z5 = (D5[i] - old) / (m.slow_sd * sigma)
        e5 = np.exp(D5[i] + pi) - c
        e_o = np.exp(old + pi) - c
        s_up = slow_ok & ~up & (z5 >= z_t) & (e5 - e_o >= floor) & (e5 - e_o >= pct_t * e_o) & (xi > e_o)
        s_dn = slow_ok & ~dn & (z5 <= -z_t) & (e_o - e5 >= floor) & (e_o - e5 >= drop_t * e_o) & (xi < e_o)
        up |= s_up
        dn |= s_dn
        fell = (below < FELL) & (below <= -m.accept_z * sigma)
        shared = common and int(fell.sum()) >= common_min
        if shared:
            dn[:] = False  # many series fell together: a holiday, not an outage
        direction[i] = up.astype(np.int8) - dn.astype(np.int8)
        told |= up | dn
        expected[i] = np.where(dn, e_dn, np.where(up, e_up, np.exp(level + pi) - c))
        score[i] = zz
        # a new normal: ACCEPT days in a row beyond ACCEPT_Z in one direction, or a slow alert
        up_run = np.where(zz >= m.accept_z, up_run + 1, 0)
        dn_run = np.where(zz <= -m.accept_z, dn_run + 1, 0)
        slow = s_up | s_dn
        accept = calm & ((up_run >= m.accept) | (dn_run >= m.accept) | slow)
        # the tails of the NOISE: a day many series fell together (a holiday) says nothing
        # about how often this series' noise goes past 3 sigmas
        quiet = calm & ~(up | dn) & ~(fell & shared)
        tail_lo = np.where(quiet, (1 - TAIL_LAMBDA) * tail_lo + TAIL_LAMBDA * (zz < -3), tail_lo)
        tail_hi = np.where(quiet, (1 - TAIL_LAMBDA) * tail_hi + TAIL_LAMBDA * (zz > 3), tail_hi)
        step = np.where(calm, m.alpha * np.clip(r, -m.clip * sigma, m.clip * sigma), m.alpha_settle * r)
        new_level = level + step
        lam = np.where(calm, m.lam, m.lam_settle)
        a = np.where(calm, np.minimum(np.abs(r), 3 * sigma), np.abs(r))
        sigma = np.where(seen, np.maximum((1 - lam) * sigma + lam * 1.25 * a, MIN_SIGMA), sigma)
        if accept.any():
            med = np.median(D[i - m.accept + 1 : i + 1], axis=0)
            new_level = np.where(accept, np.where(slow, D5[i], med), new_level)
            last_accept = np.where(accept, i, last_accept)
            settle_until = np.where(accept, i + 1 + m.settle, settle_until)
            anchor = np.where(accept, np.where(slow, old, hist[max(i - m.accept, 0)]), anchor)
            told = np.where(accept, (direction[i - m.accept + 1 : i + 1] != 0).any(axis=0), told)
            up_run[accept] = 0
            dn_run[accept] = 0
        level = new_level
        hist[i] = level
    expected[:h] = X[:h]
    direction_t = np.ascontiguousarray(direction.T)
    exp_t = np.ascontiguousarray(expected.T)
    return Detection(
        expected=exp_t,
        residual=x - exp_t,
        score=np.ascontiguousarray(score.T),
        flags=direction_t != 0,
        direction=direction_t,
    )


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
