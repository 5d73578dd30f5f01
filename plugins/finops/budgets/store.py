"""Edge: actual + month-end forecast per budget -> budget_status; thresholds crossed ->
budget_alerts -> emit() through the configured routes, routed by the budget's team.

Once per threshold per month, across re-runs and retries: a crossed threshold's row is
inserted (ON CONFLICT DO NOTHING) before its alert goes out and marked alerted_at after a
delivery without errors; a row still pending (a failed delivery, a dry run) is sent by the next
run. The alert's dedup_key also goes through the delivery ledger (alert_state), so two runs
at once do not both post it."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from finops.budgets.evaluate import Basis, Crossing, crossings
from finops.budgets.settings import Budget, BudgetsConfig
from finops.forecast.series import ForecastRow, forecast_series
from finops.forecast.store import HISTORY_DAYS, as_of_day

if TYPE_CHECKING:
    from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)
_COST = {"billed": "billed_cost", "amortised": "effective_cost"}


def _day(v: object) -> date:
    return (
        v
        if isinstance(v, date) and not isinstance(v, datetime)
        else (v.date() if isinstance(v, datetime) else date.fromisoformat(str(v)[:10]))
    )


def budget_series(
    wh: Warehouse, b: Budget, start: date, end: date, project_tag_key: str = "project"
) -> dict[date, Decimal]:
    """The budget's daily cost in its currency and cost view over [start, end]."""
    hi = end + timedelta(days=1)
    out: dict[date, Decimal] = defaultdict(Decimal)
    if b.scope == "team":
        if not wh.table_exists("showback_daily"):
            return out
        line = " AND line = 'gpu'" if b.kind == "gpu" else ""
        rows = wh.query(
            f"SELECT day, SUM(cost) FROM showback_daily WHERE team = ? AND cost_view = ? AND currency = ? "
            f"AND day >= ? AND day < ?{line} GROUP BY 1",
            [b.team, b.cost_view, b.currency, start, hi],
        )
    elif b.scope == "account":
        rows = wh.query(
            f"SELECT CAST(charge_period_start AS DATE), SUM({_COST[b.cost_view]}) FROM focus_costs "
            "WHERE COALESCE(sub_account_id, billing_account_id) = ? AND billing_currency = ? "
            "AND charge_period_start >= ? AND charge_period_start < ? GROUP BY 1",
            [b.account, b.currency, start, hi],
        )
    else:
        from finops.anomaly.settings import Monitor
        from finops.anomaly.store import monitor_rows

        rows = [
            (d, v)
            for d, key, cur, v in monitor_rows(
                wh, Monitor(type="tag", tag_key=project_tag_key), b.cost_view, start, end
            )
            if key == b.project and cur == b.currency
        ]
    for d, v in rows:
        out[_day(d)] += Decimal(v or 0)
    return out


def _data_end(wh: Warehouse, b: Budget) -> date | None:
    from finops.anomaly.store import data_end

    return data_end(wh, "showback" if b.scope == "team" else "focus_costs")


def _save_status(wh: Warehouse, rows: list[tuple[Budget, ForecastRow]], now: datetime) -> None:
    import pyarrow as pa

    if not rows:
        return
    m, s = pa.decimal128(38, 10), pa.string()
    schema = pa.schema(
        [
            ("budget", s),
            ("billing_period", s),
            ("scope", s),
            ("scope_value", s),
            ("kind", s),
            ("team", s),
            ("currency", s),
            ("amount", m),
            ("actual", m),
            ("forecast", m),
            ("lo80", m),
            ("hi80", m),
            ("lo95", m),
            ("hi95", m),
            ("as_of", pa.date32()),
            ("days_left", pa.int32()),
            ("computed_at", pa.timestamp("us")),
        ]
    )
    data = [
        {
            "budget": b.name,
            "billing_period": r.period,
            "scope": b.scope,
            "scope_value": b.scope_value,
            "kind": b.kind,
            "team": b.route_team,
            "currency": b.currency,
            "amount": b.amount,
            "actual": r.to_date,
            "forecast": r.forecast,
            "lo80": r.lo80,
            "hi80": r.hi80,
            "lo95": r.lo95,
            "hi95": r.hi95,
            "as_of": r.as_of,
            "days_left": r.days_left,
            "computed_at": now,
        }
        for b, r in rows
    ]
    wh.upsert_arrow(
        "budget_status", pa.Table.from_pylist(data, schema=schema), keys=["budget", "billing_period"]
    )


def _record(
    wh: Warehouse, b: Budget, period: str, crossed: list[Crossing], now: datetime
) -> list[tuple[Basis, int]]:
    """Insert the crossings not recorded yet; return every (basis, threshold) still pending."""
    with wh.partition_lock("budget_alerts", {"budget": b.name, "billing_period": period}):
        for c in crossed:
            wh.execute(
                "INSERT INTO budget_alerts (budget, billing_period, basis, threshold_pct, currency, amount, "
                "observed, first_crossed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [b.name, period, c.basis, c.threshold_pct, b.currency, b.amount, c.observed, now],
            )
        rows = wh.query(
            "SELECT basis, threshold_pct FROM budget_alerts WHERE budget = ? AND billing_period = ? "
            "AND alerted_at IS NULL ORDER BY basis, threshold_pct",
            [b.name, period],
        )
    return [(_basis(basis), int(p)) for basis, p in rows]


def _basis(value: object) -> Basis:
    """A stored basis back as the Literal the crossings use (anything else is a corrupt row)."""
    if value == "actual":
        return "actual"
    if value == "forecast":
        return "forecast"
    raise ValueError(f"budget_alerts.basis must be 'actual' or 'forecast', not {value!r}")


@dataclass
class BudgetRun:
    budgets: int = 0
    crossed: list[str] = field(default_factory=list)  # budget:period:basis:pct newly recorded
    alerted: list[str] = field(default_factory=list)  # dedup keys delivered now
    alert_errors: int = 0
    status: dict[str, dict] = field(default_factory=dict)


def run_budgets(
    wh: Warehouse,
    cfg: BudgetsConfig,
    *,
    now: datetime | None = None,
    today: date | None = None,
    deliver: bool = True,
) -> BudgetRun:
    """Evaluate every budget for the month of its data's last complete day; alert what is new."""
    from finops.alerts import emit
    from finops.budgets.render import budget_event

    now = now or datetime.now(UTC).replace(tzinfo=None)
    today = today or now.date()
    result = BudgetRun(budgets=len(cfg.items))
    status: list[tuple[Budget, ForecastRow]] = []
    for b in cfg.items:
        end = _data_end(wh, b)
        if end is None:
            continue
        as_of = as_of_day(end, today)
        series = budget_series(wh, b, as_of - timedelta(days=HISTORY_DAYS - 1), as_of, cfg.project_tag_key)
        status.append((b, forecast_series({b.name: series}, as_of)[b.name]))
    _save_status(wh, status, now)
    for b, row in status:
        result.status[b.name] = {
            "period": row.period,
            "actual": str(row.to_date),
            "forecast": str(row.forecast),
            "amount": str(b.amount),
            "currency": b.currency,
        }
        crossed = crossings(b.amount, row.to_date, row.forecast, cfg.thresholds_of(b), row.days_left)
        before = {
            (basis, p)
            for basis, p in wh.query(
                "SELECT basis, threshold_pct FROM budget_alerts WHERE budget = ? AND billing_period = ?",
                [b.name, row.period],
            )
        }
        pending = _record(wh, b, row.period, crossed, now)
        result.crossed += [
            f"{b.name}:{row.period}:{c.basis}:{c.threshold_pct}"
            for c in crossed
            if (c.basis, c.threshold_pct) not in before
        ]
        if not deliver:
            continue
        by_basis: dict[Basis, list[Crossing]] = defaultdict(list)
        now_crossed = {(c.basis, c.threshold_pct): c for c in crossed}
        for basis, p in pending:
            # a pending forecast threshold the forecast has fallen back under is not news any more
            c = now_crossed.get((basis, p))
            if c is not None:
                by_basis[basis].append(c)
        for basis, group in sorted(by_basis.items()):
            event = budget_event(b, row, group)
            errors = emit(event)
            if errors:
                result.alert_errors += len(errors)
                continue
            wh.execute(
                "UPDATE budget_alerts SET alerted_at = ? WHERE budget = ? AND billing_period = ? AND basis = ? "
                f"AND alerted_at IS NULL AND threshold_pct IN ({', '.join('?' for _ in group)})",
                [now, b.name, row.period, basis, *[c.threshold_pct for c in group]],
            )
            result.alerted.append(str(event.dedup_key))
    log.info(
        "budgets: %d evaluated, %d thresholds newly crossed, %d alerts sent, %d delivery errors",
        len(status),
        len(result.crossed),
        len(result.alerted),
        result.alert_errors,
    )
    return result
