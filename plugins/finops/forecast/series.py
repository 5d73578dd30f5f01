"""Pure glue between exact daily costs and the model: {key: {day: Decimal}} -> one
ForecastRow per key with exact money (the cost so far is summed in Decimal; only the
remaining days' estimate comes from the float model)."""

from __future__ import annotations

import calendar
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import TypeVar

import numpy as np

from finops.forecast.model import month_end

CENT = Decimal("0.01")
ZERO = Decimal(0)


K = TypeVar("K", bound=Hashable)  # a series key: a service name, a (team, project) pair


@dataclass(frozen=True)
class ForecastRow:
    period: str  # YYYY-MM being forecast
    as_of: date  # last day of data used
    days_left: int
    to_date: Decimal
    forecast: Decimal
    lo80: Decimal
    hi80: Decimal
    lo95: Decimal
    hi95: Decimal
    replays: int


def month_bounds(as_of: date) -> tuple[date, int, int]:
    """(first day of as_of's month, days of it seen up to as_of, days left after it)."""
    last = calendar.monthrange(as_of.year, as_of.month)[1]
    return as_of.replace(day=1), as_of.day, last - as_of.day


def _money(v: float) -> Decimal:
    return Decimal(str(round(float(v), 2))).quantize(CENT)


def forecast_series(
    series: Mapping[K, Mapping[date, Decimal]], as_of: date, history_days: int = 180
) -> dict[K, ForecastRow]:
    """Month-end forecast of as_of's month for every series (days without a value: no spend)."""
    if not series:
        return {}
    first, seen, left = month_bounds(as_of)
    start = as_of - timedelta(days=history_days - 1)
    keys = list(series)
    x = np.zeros((len(keys), history_days))
    to_date = []
    for i, k in enumerate(keys):
        exact = ZERO
        for d, v in series[k].items():
            j = (d - start).days
            if 0 <= j < history_days:
                x[i, j] += float(v)
            if first <= d <= as_of:
                exact += Decimal(v)
        to_date.append(exact)
    f = month_end(x, start.weekday(), seen, left)
    period = f"{as_of.year:04d}-{as_of.month:02d}"
    out = {}
    for i, k in enumerate(keys):
        base = to_date[i]
        # Each band is the model's rest-of-month added to the exact Decimal spent so far.
        fc, lo80, hi80, lo95, hi95 = (
            base + _money(getattr(f, b)[i] - f.to_date[i])
            for b in ("forecast", "lo80", "hi80", "lo95", "hi95")
        )
        out[k] = ForecastRow(period, as_of, left, base, fc, lo80, hi80, lo95, hi95, int(f.replays[i]))
    return out
