"""Warehouse edge: the FOCUS Usage rows commitments need, grouped, read from `focus_costs`.

Grouped in SQL by everything `finops.commitments.usage` keys on (day, account, service,
instance type, commitment, status), so a year of a large account comes back as thousands of
groups, not millions of rows; the pure module rolls them up to months / families."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from finops.commitments.usage import CommitmentLine

_SQL = """
SELECT x_provider, COALESCE(sub_account_id, billing_account_id) AS account, billing_currency,
  CAST(charge_period_start AS DATE) AS day, service_name, x_instance_type, pricing_category,
  commitment_discount_status, commitment_discount_id, commitment_discount_type, commitment_discount_unit,
  SUM(effective_cost), SUM(list_cost), SUM(commitment_discount_quantity)
FROM focus_costs
WHERE charge_category = 'Usage' AND charge_period_start >= ? AND charge_period_start < ?
  AND (commitment_discount_status IN ('Used', 'Unused')
       OR (pricing_category = 'Standard' AND x_instance_type IS NOT NULL)){provider_filter}
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
"""


def commitment_lines(
    wh: Any, start: date, end: date, providers: Sequence[str] | None = None
) -> list[CommitmentLine]:
    """Usage groups with charge period starting in [start, end) (dates, UTC), optionally
    only some providers (x_provider values: aws, gcp, azure, lambda)."""
    if end <= start:
        raise ValueError(f"commitments window: end {end} must be after start {start}")
    params: list[Any] = [
        datetime.combine(start, datetime.min.time()),
        datetime.combine(end, datetime.min.time()),
    ]
    provider_filter = ""
    if providers:
        provider_filter = f"\n  AND x_provider IN ({', '.join('?' for _ in providers)})"
        params.extend(providers)
    rows = wh.query(_SQL.format(provider_filter=provider_filter), params)
    return [
        CommitmentLine(
            provider=r[0],
            account=r[1],
            currency=r[2],
            day=_as_date(r[3]),
            service_name=r[4],
            instance_type=r[5],
            pricing_category=r[6],
            status=r[7],
            commitment_id=r[8],
            commitment_type=r[9],
            unit=r[10],
            effective_cost=Decimal(r[11]),
            list_cost=Decimal(r[12]),
            quantity=None if r[13] is None else Decimal(r[13]),
        )
        for r in rows
    ]


def _as_date(v: Any) -> date:
    """DuckDB and psycopg both return `date` for CAST(... AS DATE); a driver giving text or a
    timestamp still yields the day."""
    if isinstance(v, datetime):
        return v.date()
    if isinstance(v, date):
        return v
    return date.fromisoformat(str(v)[:10])


def month_window(period: str) -> tuple[date, date]:
    """`YYYY-MM` -> [first day, first day of the next month)."""
    try:
        y, m = map(int, period.split("-"))
        first = date(y, m, 1)
    except ValueError as e:
        raise ValueError(f"commitments period {period!r}: expected YYYY-MM") from e
    return first, (first + timedelta(days=32)).replace(day=1)
