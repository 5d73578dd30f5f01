"""Edge: daily cost per team / service / account from the warehouse -> month-end forecasts ->
cost_forecasts. The same series the anomaly monitors read (finops.anomaly.store.monitor_rows),
so a team's forecast and its anomalies agree on what its cost is.

Re-running over the same data writes the same rows (the table is keyed by period, dimension,
key, currency and cost view, and a period's rows of a dimension are replaced together)."""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Literal

from finops.forecast.series import ForecastRow, forecast_series

if TYPE_CHECKING:
    from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)
Dimension = Literal["team", "service", "account"]
DIMENSIONS: tuple[Dimension, ...] = ("team", "service", "account")
HISTORY_DAYS = 180


def as_of_day(data_end: date, today: date) -> date:
    """The last COMPLETE day: billing exports keep adding to today's (and the warehouse may
    hold a partial day), which would read as a drop in the run rate."""
    return min(data_end, today - timedelta(days=1))


def dimension_series(
    wh: Warehouse, dimension: Dimension, view: str, as_of: date, history_days: int = HISTORY_DAYS
) -> dict[tuple[str, str], dict[date, Decimal]]:
    """{(key, currency): {day: cost}} for the `history_days` up to as_of."""
    from finops.anomaly.settings import Monitor
    from finops.anomaly.store import monitor_rows

    out: dict[tuple[str, str], dict[date, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    start = as_of - timedelta(days=history_days - 1)
    for day, key, cur, cost in monitor_rows(wh, Monitor(type=dimension), view, start, as_of):
        out[(str(key), str(cur))][day] += Decimal(cost or 0)
    return out


def data_end(wh: Warehouse, dimension: Dimension) -> date | None:
    from finops.anomaly.store import data_end as end_of

    return end_of(wh, "showback" if dimension == "team" else "focus_costs")


def _save(
    wh: Warehouse, dimension: str, view: str, rows: dict[tuple[str, str], ForecastRow], now: datetime
) -> None:
    import pyarrow as pa

    if not rows:
        return
    m, s = pa.decimal128(38, 10), pa.string()
    schema = pa.schema(
        [
            ("billing_period", s),
            ("dimension", s),
            ("series_key", s),
            ("currency", s),
            ("cost_view", s),
            ("as_of", pa.date32()),
            ("days_left", pa.int32()),
            ("to_date", m),
            ("forecast", m),
            ("lo80", m),
            ("hi80", m),
            ("lo95", m),
            ("hi95", m),
            ("replays", pa.int32()),
            ("computed_at", pa.timestamp("us")),
        ]
    )
    data = [
        {
            "billing_period": r.period,
            "dimension": dimension,
            "series_key": k,
            "currency": cur,
            "cost_view": view,
            "as_of": r.as_of,
            "days_left": r.days_left,
            "to_date": r.to_date,
            "forecast": r.forecast,
            "lo80": r.lo80,
            "hi80": r.hi80,
            "lo95": r.lo95,
            "hi95": r.hi95,
            "replays": r.replays,
            "computed_at": now,
        }
        for (k, cur), r in sorted(rows.items())
    ]
    period = next(iter(rows.values())).period
    with wh.partition_lock(
        "cost_forecasts", {"billing_period": period, "dimension": dimension, "cost_view": view}
    ):
        # keys that no longer have cost this month must not keep an old forecast
        keep = {(d["series_key"], d["currency"]) for d in data}
        for k, cur in wh.query(
            "SELECT series_key, currency FROM cost_forecasts WHERE billing_period = ? "
            "AND dimension = ? AND cost_view = ?",
            [period, dimension, view],
        ):
            if (k, cur) not in keep:
                wh.execute(
                    "DELETE FROM cost_forecasts WHERE billing_period = ? AND dimension = ? AND cost_view = ? "
                    "AND series_key = ? AND currency = ?",
                    [period, dimension, view, k, cur],
                )
        wh.upsert_arrow(
            "cost_forecasts",
            pa.Table.from_pylist(data, schema=schema),
            keys=["billing_period", "dimension", "series_key", "currency", "cost_view"],
        )


def run_forecasts(
    wh: Warehouse,
    view: str = "amortised",
    today: date | None = None,
    dimensions: tuple[Dimension, ...] = DIMENSIONS,
    now: datetime | None = None,
) -> dict[str, dict]:
    """Forecast the month of each dimension's last complete day; returns a summary per dimension."""
    now = now or datetime.now(UTC).replace(tzinfo=None)
    today = today or now.date()
    summary: dict[str, dict] = {}
    for dim in dimensions:
        end = data_end(wh, dim)
        if end is None:
            summary[dim] = {"series": 0, "as_of": None}
            continue
        as_of = as_of_day(end, today)
        rows = forecast_series(dimension_series(wh, dim, view, as_of), as_of)
        # a series with no cost this month has nothing to forecast for it (a retired service)
        rows = {k: r for k, r in rows.items() if r.to_date != 0 or r.forecast != 0}
        _save(wh, dim, view, rows, now)
        period = f"{as_of.year:04d}-{as_of.month:02d}"
        summary[dim] = {"series": len(rows), "as_of": as_of.isoformat(), "period": period}
        log.info("forecast %s (%s): %d series, month %s as of %s", dim, view, len(rows), period, as_of)
    return summary
