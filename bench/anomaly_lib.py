"""statsforecast as an anomaly detector, for side-by-side figures (optional extra `anomaly-lib`).

The method statsforecast documents for anomaly detection: fit a model per series and flag the
days outside its in-sample prediction interval (`forecast(..., fitted=True, level=[...])`,
then `forecast_fitted_values()`). The fit sees the whole series, future days included, which
favours the library: our detector only ever sees the past. Fitted on log(cost + c) with the
same c as ours (a quarter of the floor) (on raw dollars the Gaussian intervals of a small noisy series are useless),
and, in the "guarded" variant, the same $ floor and % / drop thresholds on the excess.
"""

from __future__ import annotations

import time

import numpy as np


def statsforecast_bounds(
    y: np.ndarray, model: str, levels: tuple[float, ...]
) -> dict[float, tuple[np.ndarray, np.ndarray]]:
    """In-sample (lo, hi) bounds per level, series and day on the scale of `y` (N x T); one fit."""
    import pandas as pd
    from statsforecast import StatsForecast
    from statsforecast.models import MSTL, AutoETS

    n, t = y.shape
    df = pd.DataFrame(
        {
            "unique_id": np.repeat(np.arange(n), t),
            "ds": np.tile(pd.date_range("2025-01-06", periods=t, freq="D"), n),
            "y": y.ravel(),
        }
    )
    if model == "mstl":
        m = MSTL(season_length=7, trend_forecaster=AutoETS(model="ZZN"))
    else:
        m = AutoETS(season_length=7, model="ZZZ")
    sf = StatsForecast(models=[m], freq="D", n_jobs=1)
    sf.forecast(df=df, h=1, level=list(levels), fitted=True)
    fv = sf.forecast_fitted_values()
    name = type(m).__name__

    def col(side: str, level: float) -> np.ndarray:
        # named after the level as statsforecast formats it (99, 99.0 or 99.9): match by value
        (c,) = [
            c for c in fv.columns if c.startswith(f"{name}-{side}-") and float(c.rsplit("-", 1)[1]) == level
        ]
        return fv[c].to_numpy().reshape(n, t)

    return {float(v): (col("lo", v), col("hi", v)) for v in levels}


def library_flags(
    x: np.ndarray, floor: float, pct: float, drop_pct: float, model: str, levels: tuple[float, ...]
) -> tuple[dict[float, tuple[np.ndarray, np.ndarray]], float]:
    """Per interval level: (plain flags, guarded flags), and the seconds the fit took. Plain:
    outside the interval; guarded: also past the same $ floor and % thresholds as our detector
    (expected = the interval's midpoint)."""
    c = max(floor / 4, 0.01)
    y = np.log(x + c)
    t0 = time.perf_counter()
    bounds = statsforecast_bounds(y, model, levels)
    secs = time.perf_counter() - t0
    out = {}
    for level, (lo, hi) in bounds.items():
        lo, hi = np.nan_to_num(lo, nan=-np.inf), np.nan_to_num(hi, nan=np.inf)
        exp = np.exp((lo + hi) / 2) - c
        up = (y > hi) & (x - exp >= floor) & (x - exp >= pct * exp)
        down = (y < lo) & (exp - x >= floor) & (exp - x >= drop_pct * exp)
        out[level] = ((y > hi) | (y < lo), up | down)
    return out, secs
