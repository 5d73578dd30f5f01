"""Labelled daily cost series, one independent generator per regime (no shared knobs).

Each generator writes its own noise family, seasonal shape and events, so a detector tuned on
some regimes can be judged on the others. They share only the label bookkeeping (`Labels`).

What is labelled (an alert there is right) and what is not (an alert there is false):
  labelled   spike (1-3 days up), outage (1-4 days down to <= 30 % of the level), level-shift
             onset (up, or down to <= 30 %), ramp onset (3-30 days to a new, higher level),
             launch (spend from nothing); only events whose $ effect is >= 2x the $ floor;
  normal     noise of every family, trends, weekday shapes, holidays and week-long lulls
             (down to 45 % of the level), mild lasting drops (to >= 60 %: savings), slow drifts,
             the new level after a shift / ramp / launch, spend below the floor.
Label windows (an alert run overlapping one matches it): spike / outage: its days + 1;
shift and launch: 14 days from the onset; ramp: its days + 7.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

MIN_ONSET = 42  # events start after six weeks of history: every detector gets a baseline


@dataclass
class Dataset:
    name: str
    x: np.ndarray  # (N, T) daily cost, >= 0
    label: np.ndarray  # (N, T) int: 0 = normal, k > 0 = inside labelled event k
    event_kind: dict[int, str] = field(default_factory=dict)

    @property
    def n_events(self) -> int:
        return len(self.event_kind)

    @property
    def kinds(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for k in self.event_kind.values():
            out[k] = out.get(k, 0) + 1
        return out


class Labels:
    """Event ids per (series, day); a later event never overwrites an earlier one's days."""

    def __init__(self, n: int, t: int) -> None:
        self.t = t
        self.label = np.zeros((n, t), dtype=np.int64)
        self.event_kind: dict[int, str] = {}

    def mark(self, i: int, a: int, b: int, kind: str) -> None:
        ev = len(self.event_kind) + 1
        seg = self.label[i, a : min(b, self.t)]
        seg[seg == 0] = ev
        self.event_kind[ev] = kind

    def dataset(self, name: str, x: np.ndarray) -> Dataset:
        return Dataset(name, np.round(np.clip(x, 0, None), 2), self.label, self.event_kind)


def _onsets(rng: np.random.Generator, t: int, k: int, gap: int, tail: int) -> list[int]:
    """Up to k onset days, >= gap apart, in [MIN_ONSET, t - tail)."""
    out: list[int] = []
    for _ in range(k * 4):
        if len(out) == k or t - tail <= MIN_ONSET:
            break
        s = int(rng.integers(MIN_ONSET, t - tail))
        if all(abs(s - o) >= gap for o in out):
            out.append(s)
    return sorted(out)


def legacy(n: int, t: int, seed: int, floor: float) -> Dataset:
    """The original mixed generator: business-week seasonality, slow trends, log-normal noise,
    shared one-day holidays, small series, new services, spikes / level shifts / ramps."""
    rng = np.random.default_rng(seed)
    days = np.arange(t)
    dow = days % 7
    holidays = np.array([0, 18, 46, 144, 185, 246, 326, 327, 358, 359])
    holidays = holidays[holidays < t]
    kind = rng.choice(["regular", "small", "new"], size=n, p=[0.72, 0.20, 0.08])
    level = np.where(kind == "small", rng.uniform(1, 15, n), np.exp(rng.normal(np.log(400), 1.1, n)))
    level = np.clip(level, 1, 60000)
    business = rng.random(n) < 0.6
    weekend = np.where(business, rng.uniform(0.35, 0.9, n), 1.0)
    season = np.where(dow[None, :] >= 5, weekend[:, None], 1.0)
    trend = np.exp(rng.normal(0.0004, 0.0008, n)[:, None] * days[None, :])
    noise_sd = np.where(kind == "small", rng.uniform(0.3, 0.6, n), rng.uniform(0.02, 0.12, n))
    noise = np.exp(rng.normal(0, 1, (n, t)) * noise_sd[:, None] - noise_sd[:, None] ** 2 / 2)
    base = level[:, None] * season * trend
    hol = np.ones((n, t))
    hol_factor = np.where(business, rng.uniform(0.3, 0.8, n), rng.uniform(0.85, 1.0, n))
    hol[:, holidays] = hol_factor[:, None]
    mult = np.ones((n, t))
    lab = Labels(n, t)
    for i in range(n):
        if kind[i] == "new":
            t0 = int(rng.integers(60, max(61, t - 20)))
            mult[i, :t0] = 0.0
            if level[i] >= 2 * floor and t0 < t:
                lab.mark(i, t0, t0 + 14, "launch")
            continue
        if kind[i] == "small":
            continue
        slots = np.arange(42, t - 10, 60)
        n_anom = min(int(rng.choice([0, 1, 2], p=[0.4, 0.45, 0.15])), len(slots))
        starts = sorted(rng.choice(slots, size=n_anom, replace=False)) if n_anom else []
        for s in starts:
            s = int(s + rng.integers(0, 30))
            if s >= t - 3:
                continue
            k = rng.choice(["spike", "level_shift", "ramp"], p=[0.5, 0.28, 0.22])
            ref = base[i, s]
            if k == "spike":
                d = int(rng.integers(1, 4))
                m = 1 + rng.uniform(0.7, 3.0)
                if ref * (m - 1) < 2 * floor:
                    continue
                mult[i, s : s + d] *= m
                lab.mark(i, s, s + d + 1, "spike")
            elif k == "level_shift":
                m = 1 + rng.uniform(0.5, 1.5)
                if ref * (m - 1) < 2 * floor:
                    continue
                mult[i, s:] *= m
                lab.mark(i, s, s + 14, "level_shift")
            else:
                d = int(rng.integers(7, 22))
                m = 1 + rng.uniform(0.8, 2.0)
                if ref * (m - 1) < 2 * floor:
                    continue
                ramp = np.full(t - s, m)
                k_ = min(d, t - s)
                ramp[:k_] = 1 + (m - 1) * (np.arange(1, k_ + 1) / d)
                mult[i, s:] *= ramp
                lab.mark(i, s, s + d + 7, "ramp")
    return lab.dataset("legacy", base * noise * hol * mult)


def small_noisy(n: int, t: int, seed: int, floor: float) -> Dataset:
    """Series below $100 a day with log-normal day-to-day noise (sigma 0.15-0.5); a third get a
    spike big enough to matter in dollars, the rest are quiet."""
    rng = np.random.default_rng(seed)
    level = np.exp(rng.uniform(np.log(3), np.log(100), n))
    sigma = rng.uniform(0.15, 0.5, n)
    dow = (np.arange(t) + rng.integers(0, 7)) % 7
    weekend = np.where(rng.random(n) < 0.3, rng.uniform(0.6, 0.9, n), 1.0)
    season = np.where(dow[None, :] >= 5, weekend[:, None], 1.0)
    x = (
        level[:, None]
        * season
        * np.exp(sigma[:, None] * rng.standard_normal((n, t)) - sigma[:, None] ** 2 / 2)
    )
    lab = Labels(n, t)
    for i in range(n):
        if rng.random() > 0.35:
            continue
        for s in _onsets(rng, t, 1, 60, 5):
            d = int(rng.integers(1, 3))
            extra = max(level[i] * rng.uniform(2.0, 5.0), rng.uniform(2.5, 6.0) * floor)
            x[i, s : s + d] += extra * rng.uniform(0.8, 1.2, d)[: t - s]
            lab.mark(i, s, s + d + 1, "spike")
    return lab.dataset("small_noisy", x)


def heavy_tail(n: int, t: int, seed: int, floor: float) -> Dataset:
    """Student-t multiplicative noise (3-10 degrees of freedom: occasional large one-day
    swings that are normal), flat or weekday-shaped; spikes and outages."""
    rng = np.random.default_rng(seed)
    level = np.exp(rng.normal(np.log(1200), 0.9, n))
    df = rng.choice([3.0, 4.0, 6.0, 10.0], n)
    scale = rng.uniform(0.02, 0.08, n)
    eps = rng.standard_t(df[:, None], (n, t)) * scale[:, None]
    x = level[:, None] * np.exp(np.clip(eps, -1.5, 1.5))
    dow = (np.arange(t) + rng.integers(0, 7)) % 7
    shaped = rng.random(n) < 0.5
    depth = rng.uniform(0.5, 0.9, n)
    x *= np.where(shaped[:, None] & (dow[None, :] >= 5), depth[:, None], 1.0)
    lab = Labels(n, t)
    for i in range(n):
        for s in _onsets(rng, t, int(rng.choice([0, 1, 2], p=[0.45, 0.4, 0.15])), 45, 6):
            d = int(rng.integers(1, 4))
            if rng.random() < 0.6:
                m = rng.uniform(2.0, 4.0)
                if level[i] * (m - 1) < 2 * floor:
                    continue
                x[i, s : s + d] *= m
                lab.mark(i, s, s + d + 1, "spike")
            else:
                if level[i] * 0.8 < 2 * floor:
                    continue
                x[i, s : s + d] *= rng.uniform(0.0, 0.2)
                lab.mark(i, s, s + d + 1, "outage")
    return lab.dataset("heavy_tail", x)


def trend(n: int, t: int, seed: int, floor: float) -> Dataset:
    """Strong compound trends (-40 % to +80 % a year, some changing slope mid-year), gamma
    noise; spikes."""
    rng = np.random.default_rng(seed)
    level = np.exp(rng.uniform(np.log(150), np.log(4000), n))
    g1 = np.log1p(rng.uniform(-0.4, 0.8, n)) / 365
    g2 = np.where(rng.random(n) < 0.4, np.log1p(rng.uniform(-0.3, 0.8, n)) / 365, g1)
    brk = rng.integers(90, max(91, t - 60), n)
    days = np.arange(t)[None, :]
    logpath = np.where(
        days < brk[:, None],
        g1[:, None] * days,
        g1[:, None] * brk[:, None] + g2[:, None] * (days - brk[:, None]),
    )
    shape = rng.uniform(40, 400, n)
    x = level[:, None] * np.exp(logpath) * rng.gamma(shape[:, None], 1 / shape[:, None], (n, t))
    lab = Labels(n, t)
    for i in range(n):
        for s in _onsets(rng, t, int(rng.choice([0, 1, 2], p=[0.5, 0.35, 0.15])), 50, 5):
            d = int(rng.integers(1, 4))
            m = rng.uniform(1.7, 3.5)
            if x[i, s] * (m - 1) < 2 * floor:
                continue
            x[i, s : s + d] *= m
            lab.mark(i, s, s + d + 1, "spike")
    return lab.dataset("trend", x)


def weekly(n: int, t: int, seed: int, floor: float) -> Dataset:
    """Weekday shapes of every depth: business week (weekends at 15-80 %), weekend-heavy,
    a Monday batch peak, a smooth weekly wave; additive normal noise; spikes and outages."""
    rng = np.random.default_rng(seed)
    level = np.exp(rng.uniform(np.log(200), np.log(8000), n))
    dow = (np.arange(t) + rng.integers(0, 7)) % 7
    shapes = rng.integers(0, 4, n)
    prof = np.ones((n, 7))
    for i in range(n):
        if shapes[i] == 0:
            prof[i, 5:] = rng.uniform(0.15, 0.8)
        elif shapes[i] == 1:
            prof[i, 5:] = rng.uniform(1.3, 2.0)
        elif shapes[i] == 2:
            prof[i, 0] = rng.uniform(1.6, 3.0)
        else:
            prof[i] = 1 + rng.uniform(0.1, 0.4) * np.sin(2 * np.pi * (np.arange(7) + rng.uniform(0, 7)) / 7)
    base = level[:, None] * prof[:, dow]
    cv = rng.uniform(0.02, 0.1, n)
    x = np.clip(base * (1 + cv[:, None] * rng.standard_normal((n, t))), 0, None)
    lab = Labels(n, t)
    for i in range(n):
        for s in _onsets(rng, t, int(rng.choice([0, 1, 2], p=[0.45, 0.4, 0.15])), 45, 6):
            d = int(rng.integers(1, 3))
            if rng.random() < 0.65:
                add = level[i] * rng.uniform(0.8, 2.5)
                if add < 2 * floor:
                    continue
                x[i, s : s + d] += add
                lab.mark(i, s, s + d + 1, "spike")
            else:
                if base[i, s] * 0.8 < 2 * floor:
                    continue
                x[i, s : s + d] *= rng.uniform(0.0, 0.15)
                lab.mark(i, s, s + d + 1, "outage")
    return lab.dataset("weekly", x)


def holiday(n: int, t: int, seed: int, floor: float) -> Dataset:
    """A shared week-long lull (spend down to 45-95 % with a one-day taper each side, deeper
    for business-week series), a few shared one-day holidays; spikes elsewhere. The lull and
    the holidays are normal."""
    rng = np.random.default_rng(seed)
    level = np.exp(rng.normal(np.log(900), 0.8, n))
    dow = (np.arange(t) + rng.integers(0, 7)) % 7
    business = rng.random(n) < 0.6
    weekend = np.where(business, rng.uniform(0.3, 0.85, n), 1.0)
    x = level[:, None] * np.where(dow[None, :] >= 5, weekend[:, None], 1.0)
    mult = np.ones((n, t))
    depth = np.where(business, rng.uniform(0.45, 0.8, n), rng.uniform(0.8, 0.97, n))
    lull0 = max(MIN_ONSET, min(355, t - 12))
    mult[:, lull0 : lull0 + 7] = depth[:, None]
    mult[:, [lull0 - 1, lull0 + 7]] = (1 + depth[:, None]) / 2
    for h in (100, 146, 240):
        if h < lull0 - 10:
            mult[:, h] = np.where(business, rng.uniform(0.6, 0.85, n), 1.0)
    x = x * mult * np.exp(rng.laplace(0, rng.uniform(0.02, 0.08, n)[:, None], (n, t)))
    lab = Labels(n, t)
    quiet = np.zeros(t, bool)
    quiet[max(0, lull0 - 3) : lull0 + 12] = True
    for i in range(n):
        for s in _onsets(rng, t, int(rng.choice([0, 1], p=[0.5, 0.5])), 60, 14):
            if quiet[s : s + 4].any():
                continue
            d = int(rng.integers(1, 4))
            m = rng.uniform(1.8, 3.5)
            if x[i, s] * (m - 1) < 2 * floor:
                continue
            x[i, s : s + d] *= m
            lab.mark(i, s, s + d + 1, "spike")
    return lab.dataset("holiday", x)


def level_shift(n: int, t: int, seed: int, floor: float) -> Dataset:
    """Persistent level shifts: up 1.4-3x or down to 10-30 % (labelled at the onset), or a
    mild lasting drop to 60-90 % (savings: normal); log-normal noise, some weekday shape."""
    rng = np.random.default_rng(seed)
    level = np.exp(rng.uniform(np.log(150), np.log(6000), n))
    sigma = rng.uniform(0.02, 0.15, n)
    dow = (np.arange(t) + rng.integers(0, 7)) % 7
    weekend = np.where(rng.random(n) < 0.4, rng.uniform(0.4, 0.9, n), 1.0)
    base = level[:, None] * np.where(dow[None, :] >= 5, weekend[:, None], 1.0)
    mult = np.ones((n, t))
    lab = Labels(n, t)
    for i in range(n):
        for s in _onsets(rng, t, int(rng.choice([0, 1, 2], p=[0.3, 0.5, 0.2])), 70, 10):
            ref = level[i] * mult[i, s]
            u = rng.random()
            if u < 0.6:
                m = rng.uniform(1.4, 3.0)
                mult[i, s:] *= m
                if ref * (m - 1) >= 2 * floor:
                    lab.mark(i, s, s + 14, "level_shift")
            elif u < 0.8:
                m = rng.uniform(0.1, 0.3)
                mult[i, s:] *= m
                if ref * (1 - m) >= 2 * floor:
                    lab.mark(i, s, s + 14, "level_drop")
            else:
                mult[i, s:] *= rng.uniform(0.6, 0.9)
    x = base * mult * np.exp(sigma[:, None] * rng.standard_normal((n, t)))
    return lab.dataset("level_shift", x)


def ramp(n: int, t: int, seed: int, floor: float) -> Dataset:
    """Multi-day ramps (3-30 days, linear or S-shaped) to 1.5-3x, labelled at the onset; slow
    drifts of +5-20 % over a month (normal); gamma noise."""
    rng = np.random.default_rng(seed)
    level = np.exp(rng.uniform(np.log(200), np.log(5000), n))
    mult = np.ones((n, t))
    lab = Labels(n, t)
    for i in range(n):
        for s in _onsets(rng, t, int(rng.choice([0, 1, 2], p=[0.3, 0.5, 0.2])), 80, 8):
            ref = level[i] * mult[i, s]
            if rng.random() < 0.75:
                d, m = int(rng.integers(3, 31)), rng.uniform(1.5, 3.0)
                labelled = True
            else:
                d, m = int(rng.integers(20, 40)), rng.uniform(1.05, 1.2)
                labelled = False
            u = np.arange(1, t - s + 1) / d
            path = (
                np.clip(u, 0, 1) if rng.random() < 0.5 else 1 / (1 + np.exp(-10 * (np.clip(u, 0, 1.2) - 0.5)))
            )
            path = np.where(u >= 1, 1.0, path)
            mult[i, s:] *= 1 + (m - 1) * path
            if labelled and ref * (m - 1) >= 2 * floor:
                lab.mark(i, s, s + d + 7, "ramp")
    shape = rng.uniform(30, 300, n)
    x = level[:, None] * mult * rng.gamma(shape[:, None], 1 / shape[:, None], (n, t))
    return lab.dataset("ramp", x)


def launch(n: int, t: int, seed: int, floor: float) -> Dataset:
    """Services launched from zero (cents of idle spend before), reaching their level within
    0-3 days; launches below the floor are not labelled. Weekday shape after launch."""
    rng = np.random.default_rng(seed)
    lab = Labels(n, t)
    x = rng.uniform(0, 0.05, (n, t)) * (rng.random((n, t)) < 0.3)
    dow = (np.arange(t) + rng.integers(0, 7)) % 7
    for i in range(n):
        if rng.random() < 0.2:  # already running
            s = 0
        else:
            s = int(rng.integers(MIN_ONSET, max(MIN_ONSET + 1, t - 10)))
        small = rng.random() < 0.2  # a launch too small to matter: under the floor, never labelled
        lvl = float(
            rng.uniform(2, 0.8 * floor) if small else np.exp(rng.uniform(np.log(2 * floor), np.log(6000)))
        )
        ramp_days = int(rng.integers(0, 4))
        grow = np.clip((np.arange(t - s) + 1) / (ramp_days + 1), 0, 1)
        wk = np.where(dow[s:] >= 5, rng.uniform(0.4, 1.0), 1.0)
        cv = rng.uniform(0.03, 0.2)
        x[i, s:] += lvl * grow * wk * np.exp(cv * rng.standard_normal(t - s))
        if s > 0 and not small:
            lab.mark(i, s, s + 14, "launch")
    return lab.dataset("launch", x)


def outage(n: int, t: int, seed: int, floor: float) -> Dataset:
    """Short outages (1-4 days at 0-30 % of the level), plus normal one-day dips to 70-90 %;
    multiplicative log-logistic noise, business or flat weeks."""
    rng = np.random.default_rng(seed)
    level = np.exp(rng.normal(np.log(1500), 0.8, n))
    dow = (np.arange(t) + rng.integers(0, 7)) % 7
    weekend = np.where(rng.random(n) < 0.5, rng.uniform(0.35, 0.9, n), 1.0)
    base = level[:, None] * np.where(dow[None, :] >= 5, weekend[:, None], 1.0)
    u = rng.uniform(1e-9, 1 - 1e-9, (n, t))
    s_ = rng.uniform(0.02, 0.07, n)[:, None]
    x = base * np.exp(s_ * np.log(u / (1 - u)))
    dips = rng.random((n, t)) < 0.01
    x = np.where(dips, x * rng.uniform(0.7, 0.9, (n, t)), x)
    lab = Labels(n, t)
    for i in range(n):
        for s in _onsets(rng, t, int(rng.choice([0, 1, 2], p=[0.35, 0.45, 0.2])), 45, 6):
            d = int(rng.integers(1, 5))
            if base[i, s] * 0.7 < 2 * floor:
                continue
            x[i, s : s + d] *= rng.uniform(0.0, 0.3)
            lab.mark(i, s, s + d + 1, "outage")
    return lab.dataset("outage", x)


REGIMES: dict[str, Callable[[int, int, int, float], Dataset]] = {
    "legacy": legacy,
    "small_noisy": small_noisy,
    "heavy_tail": heavy_tail,
    "trend": trend,
    "weekly": weekly,
    "holiday": holiday,
    "level_shift": level_shift,
    "ramp": ramp,
    "launch": launch,
    "outage": outage,
}
# Tune on one half, judge on the other; then the reverse. Each half holds spikes, drops,
# shifts or ramps, and launches, but never the same generator code.
SPLIT_A = ("legacy", "small_noisy", "weekly", "level_shift", "outage")
SPLIT_B = ("heavy_tail", "trend", "holiday", "ramp", "launch")


def generate_all(
    n_per: int, t: int, seed: int, floor: float, names: tuple[str, ...] | None = None
) -> list[Dataset]:
    return [REGIMES[r](n_per, t, seed * 1000 + j, floor) for j, r in enumerate(names or tuple(REGIMES))]
