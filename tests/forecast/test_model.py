"""The month-end forecast model (pure numpy) and its exact-money wrapper."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import numpy as np

from finops.forecast.model import month_end
from finops.forecast.series import forecast_series, month_bounds


def test_flat_series_forecasts_its_run_rate_with_tight_intervals():
    x = np.full((1, 120), 100.0)
    f = month_end(x, 0, 10, 20)
    assert f.to_date[0] == 1000.0
    assert abs(f.forecast[0] - 3000.0) < 1e-6
    assert f.lo95[0] <= f.lo80[0] <= f.forecast[0] <= f.hi80[0] <= f.hi95[0]
    assert f.hi95[0] - f.lo95[0] < 1e-6  # no noise: no uncertainty


def test_weekday_shape_is_forecast_not_averaged():
    """A business-days-only series: the month's remaining weekend days add nothing."""
    t = 140
    wd = np.arange(t) % 7  # column 0 is a Monday
    x = np.where(wd < 5, 200.0, 0.0)[None, :]
    # 7 remaining days = exactly one week: 5 business days
    f = month_end(x, 0, 20, 7)
    assert abs(f.forecast[0] - (x[0, -20:].sum() + 5 * 200.0)) < 1e-6


def test_intervals_cover_noisy_series_and_only_widen_with_the_horizon():
    rng = np.random.default_rng(3)
    x = 500 * rng.lognormal(-0.02, 0.2, (400, 200))
    early = month_end(x[:, :-25], 0, 5, 25)
    late = month_end(x[:, :-5], 0, 25, 5)
    width = lambda f: np.median((f.hi80 - f.lo80) / f.forecast)  # noqa: E731
    assert width(early) > width(late) > 0
    actual_early = x[:, -30:].sum(axis=1)
    cover = np.mean((actual_early >= early.lo80) & (actual_early <= early.hi80))
    assert 0.7 <= cover <= 0.95, cover
    assert (early.replays >= 20).all()


def test_month_complete_means_no_uncertainty():
    x = np.full((2, 60), 10.0)
    f = month_end(x, 0, 31, 0)
    assert (f.forecast == f.to_date).all() and (f.hi95 == f.lo95).all() and f.days_left == 0


def test_young_series_gets_a_wide_default_interval_not_a_crash():
    f = month_end(np.full((1, 5), 50.0), 0, 5, 25)
    assert f.replays[0] == 0 and f.lo95[0] < f.forecast[0] < f.hi95[0]


def test_exact_money_to_date_and_month_bounds():
    as_of = date(2026, 2, 10)
    assert month_bounds(as_of) == (date(2026, 2, 1), 10, 18)
    days = [as_of - timedelta(days=i) for i in range(90)]
    series = {("ml", "USD"): {d: Decimal("33.3333333333") for d in days}}
    row = forecast_series(series, as_of)[("ml", "USD")]
    assert row.period == "2026-02" and row.days_left == 18
    assert row.to_date == Decimal("33.3333333333") * 10  # summed in Decimal, not float
    assert row.forecast == row.to_date + Decimal("600.00")
    assert row.lo95 <= row.lo80 <= row.forecast <= row.hi80 <= row.hi95
