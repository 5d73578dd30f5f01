"""Side by side on the same held-back months: finops.forecast.model against statsforecast's
AutoETS (weekly season) and MSTL, month-end totals from the days' point forecasts. statsforecast
is the optional `anomaly-lib` extra:

    .venv/bin/python bench/forecast_library.py [--series 100] [--months 3] [--libs MSTL] [--as-of 5 15]

Only point forecasts are compared (MAPE): the libraries' intervals are per day, and a sum of
per-day bounds is not an interval of the month's total.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))

from forecast import GENERATORS, START, TUNE, month_starts  # noqa: E402

from finops.forecast import model  # noqa: E402

DAYS = (5, 15, 25)


def library_sums(x: np.ndarray, h: int, which: str) -> np.ndarray:
    import pandas as pd
    from statsforecast import StatsForecast
    from statsforecast.models import MSTL, AutoETS

    n, t = x.shape
    df = pd.DataFrame(
        {"unique_id": np.repeat(np.arange(n), t), "ds": np.tile(np.arange(t), n), "y": x.ravel()}
    )
    m = AutoETS(season_length=7) if which == "AutoETS" else MSTL(season_length=7)
    fc = StatsForecast(models=[m], freq=1, n_jobs=1).forecast(df=df, h=h)
    col = [c for c in fc.columns if c not in ("unique_id", "ds")][0]
    return fc.groupby("unique_id")[col].sum().reindex(np.arange(n)).to_numpy()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=100)
    ap.add_argument("--days", type=int, default=547)
    ap.add_argument("--months", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--libs", nargs="+", default=["MSTL", "AutoETS"], choices=["MSTL", "AutoETS"])
    ap.add_argument(
        "--as-of", type=int, nargs="+", default=list(DAYS), help="days of the month forecast from"
    )
    args = ap.parse_args()
    print(
        f"{args.series} series x {args.days} days per generator, last {args.months} months, forecast from days "
        f"{tuple(args.as_of)}"
    )
    for i, (name, gen) in enumerate(GENERATORS.items()):
        x = gen(np.random.default_rng(args.seed + 101 * i), args.series, args.days)
        starts = month_starts(x.shape[1])
        ape: dict[str, list[float]] = {"ours": [], **{lib: [] for lib in args.libs}}
        secs = dict.fromkeys(ape, 0.0)
        for m0, m1 in list(zip(starts, starts[1:], strict=False))[-args.months :]:
            actual = x[:, m0:m1].sum(axis=1)
            ok = actual >= 1.0
            for day in args.as_of:
                cut = m0 + day
                seen = x[:, m0:cut].sum(axis=1)
                t0 = time.perf_counter()
                ours = model.month_end(x[:, :cut], START.weekday(), day, m1 - cut).forecast
                secs["ours"] += time.perf_counter() - t0
                got = {"ours": ours}
                for lib in args.libs:
                    t0 = time.perf_counter()
                    got[lib] = seen + library_sums(x[:, :cut], m1 - cut, lib)
                    secs[lib] += time.perf_counter() - t0
                for k, v in got.items():
                    ape[k] += list(np.abs(v[ok] - actual[ok]) / actual[ok])
        group = "tune" if name in TUNE else "held"
        print(
            f"  {name:9s} [{group}] "
            + "  ".join(f"{k} MAPE {100 * np.mean(v):5.1f} % ({secs[k]:.1f} s)" for k, v in ape.items()),
            flush=True,
        )


if __name__ == "__main__":
    main()
