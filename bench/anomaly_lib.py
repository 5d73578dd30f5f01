"""statsforecast as an anomaly detector, for side-by-side figures (optional extra `anomaly-lib`).

The method statsforecast documents for anomaly detection: fit a model per series and flag the
days outside its in-sample prediction interval (`forecast(..., fitted=True, level=[...])`,
then `forecast_fitted_values()`). The fit sees the whole series, future days included, which
favours the library: our detector only ever sees the past. Fitted on log(cost + c) with the
same c as ours (on raw dollars the Gaussian intervals of a small noisy series are useless),
and, in the "guarded" variant, the same $ floor and % / drop thresholds on the excess.
"""

from __future__ import annotations

import time

import numpy as np


def statsforecast_bounds(
    y: np.ndarray, model: str = "mstl", level: float = 99.0
) -> tuple[np.ndarray, np.ndarray]:
    """In-sample (lo, hi) bounds per series and day on the scale of `y` (N x T)."""
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
    lv = int(level) if float(level).is_integer() else level  # the column is named after it as given
    sf.forecast(df=df, h=1, level=[lv], fitted=True)
    fv = sf.forecast_fitted_values()
    name = type(m).__name__
    lo = fv[f"{name}-lo-{lv}"].to_numpy().reshape(n, t)
    hi = fv[f"{name}-hi-{lv}"].to_numpy().reshape(n, t)
    return lo, hi


def library_flags(
    x: np.ndarray, floor: float, pct: float, drop_pct: float, model: str = "mstl", level: float = 99.0
) -> tuple[np.ndarray, np.ndarray, float]:
    """(plain flags, guarded flags, seconds): outside the interval, and additionally past the
    same $ floor and % thresholds as our detector (expected = the interval's midpoint)."""
    c = max(floor / 2, 0.01)
    y = np.log(x + c)
    t0 = time.perf_counter()
    lo, hi = statsforecast_bounds(y, model, level)
    secs = time.perf_counter() - t0
    lo, hi = np.nan_to_num(lo, nan=-np.inf), np.nan_to_num(hi, nan=np.inf)
    plain = (y > hi) | (y < lo)
    exp = np.exp((lo + hi) / 2) - c
    up = (y > hi) & (x - exp >= floor) & (x - exp >= pct * exp)
    down = (y < lo) & (exp - x >= floor) & (exp - x >= drop_pct * exp)
    return plain, up | down, secs
