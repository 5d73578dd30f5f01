"""Month-end forecast backtest: held-back months of several independent generators and of the
demo's CUR billing data, forecast from several days of the month (data up to that day only),
scored against the month's real total.

    .venv/bin/python bench/forecast.py [--series 2000] [--seed 7] [--months 6] [--speed 10000]

Reported per regime: MAPE of the month total (cases with a total >= $1), the share of totals
inside the 80 % and 95 % intervals (coverage; the target is the nominal level), the
interval's median relative width, and two baselines' MAPE on the same cases: the month's run
rate so far stretched to the whole month, and last month's total. The model's free parameters (LEVEL_DAYS, INTERVAL_WIDEN in
finops.forecast.model) are chosen on the TUNE regimes and judged on the HELD regimes and the
demo data, which they never saw.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))

from finops.forecast import model  # noqa: E402

START = date(2025, 1, 1)
AS_OF_DAYS = (1, 5, 10, 15, 20, 25)  # day of the month the forecast is made on (data through it)
TUNE = ("seasonal", "trend", "shifts")
HELD = ("ramps", "spiky", "walk", "demo-cur")


def _weekdays(t: int) -> np.ndarray:
    return (START.weekday() + np.arange(t)) % 7


# -- generators: each its own code, no shared shape ------------------------------------------


def gen_seasonal(rng: np.random.Generator, n: int, t: int) -> np.ndarray:
    """Weekday / weekend pattern of random depth, log-normal day noise (sigma 0.03-0.5)."""
    level = np.exp(rng.normal(np.log(300), 1.3, n))
    depth = rng.uniform(0.0, 0.8, n)
    wk = np.where(_weekdays(t)[None, :] >= 5, 1 - depth[:, None], 1.0)
    sigma = rng.uniform(0.03, 0.5, n)[:, None]
    return level[:, None] * wk * np.exp(rng.normal(0, 1, (n, t)) * sigma - sigma**2 / 2)


def gen_trend(rng: np.random.Generator, n: int, t: int) -> np.ndarray:
    """Compound growth of -30 % .. +80 % a year, mild weekly shape, gamma noise."""
    growth = rng.uniform(np.log(0.7), np.log(1.8), n) / 365
    level = np.exp(rng.normal(np.log(150), 1.0, n))
    shape = 1 + rng.uniform(-0.25, 0.1, (n, 7))
    base = level[:, None] * np.exp(growth[:, None] * np.arange(t)) * shape[:, _weekdays(t)]
    k = rng.uniform(4, 80, n)[:, None]
    return rng.gamma(k, base / k)


def gen_shifts(rng: np.random.Generator, n: int, t: int) -> np.ndarray:
    """Persistent level shifts (1-3 a year, x0.4 .. x2.5) on a flat, noisy series."""
    out = np.empty((n, t))
    for i in range(n):
        lvl = np.full(t, rng.lognormal(np.log(500), 1.0))
        for day in rng.integers(30, t, rng.integers(1, 4)):
            lvl[day:] *= rng.choice([rng.uniform(0.4, 0.8), rng.uniform(1.3, 2.5)])
        out[i] = lvl * (1 + rng.normal(0, rng.uniform(0.02, 0.15), t)).clip(0.05)
    return out


def gen_ramps(rng: np.random.Generator, n: int, t: int) -> np.ndarray:
    """Launches from zero and multi-day ramps (5-30 days) to a new level, business-day shape."""
    out = np.zeros((n, t))
    biz = np.where(_weekdays(t) >= 5, 0.3, 1.0)
    for i in range(n):
        start = int(rng.integers(0, t // 2)) if rng.random() < 0.4 else 0
        lvl = np.zeros(t)
        lvl[start:] = rng.lognormal(np.log(200), 0.8)
        for _ in range(rng.integers(1, 3)):
            a = int(rng.integers(start + 10, t - 5))
            length = int(rng.integers(5, 31))
            target = lvl[a] * rng.uniform(0.3, 3.0)
            ramp = np.linspace(lvl[a], target, length)
            b = min(a + length, t)
            lvl[a:b] = ramp[: b - a]
            lvl[b:] = target
        use_biz = rng.random() < 0.5
        out[i] = lvl * (biz if use_biz else 1.0) * rng.lognormal(-0.005, 0.1, t)
    return out


def gen_spiky(rng: np.random.Generator, n: int, t: int) -> np.ndarray:
    """Small, heavy-tailed series: Pareto spikes, 1-3 day outages, a week-long holiday lull."""
    base = rng.uniform(5, 120, n)[:, None] * np.ones((1, t))
    noise = rng.lognormal(-0.125, 0.5, (n, t))
    spikes = (rng.random((n, t)) < 0.02) * (rng.pareto(1.8, (n, t)) * 3)
    x = base * (noise + spikes)
    for i in range(n):
        for _ in range(rng.integers(0, 3)):
            d = int(rng.integers(0, t - 3))
            x[i, d : d + int(rng.integers(1, 4))] = 0.0
    lull = (np.arange(t) >= 355) & (np.arange(t) < 362)  # late December
    x[:, lull] *= rng.uniform(0.2, 0.7, n)[:, None]
    return x


def gen_walk(rng: np.random.Generator, n: int, t: int) -> np.ndarray:
    """Drifting usage: log-cost an AR(1) around a random walk (no fixed level to return to)."""
    steps = rng.normal(0, rng.uniform(0.005, 0.03, n)[:, None], (n, t))
    walk = np.cumsum(steps, axis=1)
    ar = np.zeros((n, t))
    phi, sd = rng.uniform(0.3, 0.9, n), rng.uniform(0.03, 0.2, n)
    eps = rng.normal(0, 1, (n, t)) * sd[:, None]
    for j in range(1, t):
        ar[:, j] = phi * ar[:, j - 1] + eps[:, j]
    return np.exp(np.log(rng.lognormal(np.log(250), 1.0, n))[:, None] + walk + ar)


GENERATORS = {
    "seasonal": gen_seasonal,
    "trend": gen_trend,
    "shifts": gen_shifts,
    "ramps": gen_ramps,
    "spiky": gen_spiky,
    "walk": gen_walk,
}


def demo_cur(months: int, seed: int) -> tuple[np.ndarray, date]:
    """Daily cost per (service, linked account) from the demo's CUR 2.0 generator, month after month."""
    import pyarrow.compute as pc

    from finops.demo.cur_generator import GenSpec, iter_period
    from finops.periods import shift

    first = "2025-01"
    periods = [shift(first, i) for i in range(months)]
    acc: dict[tuple[str, str], dict[date, float]] = defaultdict(lambda: defaultdict(float))
    for i, p in enumerate(periods):
        for tbl in iter_period(GenSpec(period=p, rows=40_000, seed=seed + i, include_purchases=False)):
            tbl = tbl.filter(
                pc.is_in(
                    tbl["line_item_line_item_type"],
                    value_set=__import__("pyarrow").array(
                        ["Usage", "SavingsPlanCoveredUsage", "DiscountedUsage"]
                    ),
                )
            )
            days = tbl["line_item_usage_start_date"].to_pylist()
            prod = tbl["line_item_product_code"].to_pylist()
            accts = tbl["line_item_usage_account_id"].to_pylist()
            cost = tbl["line_item_unblended_cost"].to_numpy(zero_copy_only=False)
            for d, s, a, c in zip(days, prod, accts, cost, strict=True):
                acc[(s, a)][d.date()] += float(c)
    t = (date.fromisoformat(shift(first, months) + "-01") - START).days
    keys = sorted(acc)
    x = np.zeros((len(keys), t))
    for i, k in enumerate(keys):
        for d, v in acc[k].items():
            j = (d - START).days
            if 0 <= j < t:
                x[i, j] += v
    return x, START


# -- backtest --------------------------------------------------------------------------------


def month_starts(t: int) -> list[int]:
    out, d = [], START
    while (d - START).days < t:
        out.append((d - START).days)
        d = (d.replace(day=28) + timedelta(days=4)).replace(day=1)
    return out


def backtest(x: np.ndarray, held_months: int, **kw) -> dict[str, list[float]]:
    """Forecast each of the last `held_months` complete months from each AS_OF day."""
    t = x.shape[1]
    starts = month_starts(t)
    out: dict[str, list] = defaultdict(list)
    for m0, m1 in list(zip(starts, [*starts[1:], t], strict=True))[:-1][-held_months:]:
        if m1 > t:
            continue
        actual = x[:, m0:m1].sum(axis=1)
        for day in AS_OF_DAYS:
            cut = m0 + day  # columns [0, cut): data through the `day`-th of the month
            if cut >= m1:
                continue
            f = model.month_end(x[:, :cut], START.weekday(), day, m1 - cut, **kw)
            ok = actual >= 1.0
            # baselines: the month's run rate so far stretched to the month (what a spreadsheet
            # does), and last month's total
            runrate = x[:, m0:cut].sum(axis=1) * (m1 - m0) / day
            last = x[:, max(m0 - (m1 - m0), 0) : m0].sum(axis=1)
            out["ape_runrate"] += list(np.abs(runrate[ok] - actual[ok]) / actual[ok])
            out["ape_last"] += list(np.abs(last[ok] - actual[ok]) / actual[ok])
            out["ape"] += list(np.abs(f.forecast[ok] - actual[ok]) / actual[ok])
            out["in80"] += list(((actual >= f.lo80) & (actual <= f.hi80))[ok])
            out["in95"] += list(((actual >= f.lo95) & (actual <= f.hi95))[ok])
            out["width80"] += list(((f.hi80 - f.lo80) / np.maximum(f.forecast, 1e-9))[ok])
            out["day"] += [day] * int(ok.sum())
    return out


def summary(r: dict[str, list]) -> str:
    ape = np.asarray(r["ape"])
    return (
        f"MAPE {100 * ape.mean():5.1f} %  median APE {100 * np.median(ape):4.1f} %  "
        f"cover80 {100 * np.mean(r['in80']):5.1f} %  cover95 {100 * np.mean(r['in95']):5.1f} %  "
        f"width80 {100 * np.median(r['width80']):5.1f} %  (n={ape.size}); baseline MAPE: run rate "
        f"{100 * np.mean(r['ape_runrate']):.1f} %, last month {100 * np.mean(r['ape_last']):.1f} %"
    )


def by_day(r: dict[str, list]) -> str:
    day, ape = np.asarray(r["day"]), np.asarray(r["ape"])
    return "  ".join(f"d{d}: {100 * ape[day == d].mean():.1f} %" for d in AS_OF_DAYS if (day == d).any())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=2000, help="series per generator")
    ap.add_argument("--days", type=int, default=547, help="days per generated series (from 2025-01-01)")
    ap.add_argument("--months", type=int, default=6, help="held-back months scored per series")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--speed", type=int, default=10000, help="series for the timing run (0: skip)")
    ap.add_argument("--level-days", type=int, default=model.LEVEL_DAYS)
    ap.add_argument("--widen", type=float, nargs=2, default=model.INTERVAL_WIDEN, metavar=("W80", "W95"))
    args = ap.parse_args()
    kw = {"level_days": args.level_days, "widen": tuple(args.widen)}
    print(
        f"month-end forecast backtest: {args.series} series x {args.days} days per generator, last "
        f"{args.months} months held back, forecast from days {AS_OF_DAYS}; level_days={args.level_days} "
        f"widen={args.widen}"
    )
    pooled: dict[str, dict[str, list]] = {"tune": defaultdict(list), "held": defaultdict(list)}
    for i, (name, gen) in enumerate(GENERATORS.items()):
        x = gen(np.random.default_rng(args.seed + 101 * i), args.series, args.days)
        r = backtest(x, args.months, **kw)
        group = "tune" if name in TUNE else "held"
        for k, v in r.items():
            pooled[group][k] += v
        print(f"  {name:9s} [{group}] {summary(r)}")
        print(f"            by forecast day: {by_day(r)}")
    t0 = time.perf_counter()
    x, _ = demo_cur(months=args.months + 4, seed=args.seed)
    r = backtest(x, args.months, **kw)
    for k, v in r.items():
        pooled["held"][k] += v
    print(
        f"  demo-cur  [held] {summary(r)}  ({x.shape[0]} service x account series, {time.perf_counter() - t0:.0f} s "
        "to generate)"
    )
    print(f"            by forecast day: {by_day(r)}")
    print(f"  TUNE regimes: {summary(pooled['tune'])}")
    print(f"  HELD regimes: {summary(pooled['held'])}")
    if args.speed:
        x = gen_seasonal(np.random.default_rng(1), args.speed, 365)
        best = []
        for _ in range(3):
            t0 = time.perf_counter()
            model.month_end(x, START.weekday(), 15, 16, **kw)
            best.append(time.perf_counter() - t0)
        print(
            f"speed: {args.speed} series x 365 days, one month-end forecast with intervals: "
            f"{min(best):.2f} s (best of 3)"
        )


if __name__ == "__main__":
    main()
