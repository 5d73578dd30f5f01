"""Which budget thresholds a month's spend has crossed (pure: no warehouse, no Airflow).

A threshold on `actual` is crossed when the spend so far reaches that share of the amount; on
`forecast`, when the month-end point forecast does: the warning that comes while the month
still has days to act in. Money stays Decimal; the comparison is exact."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from finops.budgets.settings import Thresholds

Basis = Literal["actual", "forecast"]


@dataclass(frozen=True)
class Crossing:
    basis: Basis
    threshold_pct: int
    observed: Decimal  # the actual or forecast spend that crossed it
    amount: Decimal

    @property
    def limit(self) -> Decimal:
        return self.amount * self.threshold_pct / 100


def crossings(
    amount: Decimal, actual: Decimal, forecast: Decimal | None, thresholds: Thresholds, days_left: int
) -> list[Crossing]:
    """Every threshold crossed now, lowest first per basis. No forecast crossing once the month
    is over (days_left 0): the actual thresholds say it then."""
    out = [Crossing("actual", p, actual, amount) for p in thresholds.actual if actual >= amount * p / 100]
    if forecast is not None and days_left > 0:
        out += [
            Crossing("forecast", p, forecast, amount)
            for p in thresholds.forecast
            if forecast >= amount * p / 100
        ]
    return out


def share(observed: Decimal, amount: Decimal) -> Decimal:
    """observed / amount as a percentage to one decimal (for messages)."""
    return (observed * 100 / amount).quantize(Decimal("0.1")) if amount else Decimal(0)
