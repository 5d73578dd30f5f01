"""SQL behind the planning pages of the FinOps view: month-end forecasts, budgets vs actual vs
forecast, and the feedback people gave on anomalies. Same rules as finops.ui.queries: bound
values only, money as exact strings to the cent, an empty state instead of an error."""

from __future__ import annotations

from typing import Any

from finops.ui.db import Reader
from finops.ui.queries import Page, _iso, empty, money

_BANDS = ("lo80", "hi80", "lo95", "hi95")


def _latest_period(r: Reader, table: str, where: str = "", params: list | None = None) -> str | None:
    rows = r.query(f"SELECT MAX(billing_period) FROM {table}{where}", params or [])
    return rows[0][0] if rows and rows[0][0] else None


def forecasts(r: Reader, *, dimension: str, period: str | None, view: str, page: Page) -> dict[str, Any]:
    if not r.has("cost_forecasts"):
        return empty("table cost_forecasts does not exist yet")
    period = period or _latest_period(r, "cost_forecasts", " WHERE dimension = ?", [dimension])
    if period is None:
        return empty("no forecasts yet: the finops_budgets DAG writes them after each showback")
    args = [period, dimension, view]
    where = " WHERE billing_period = ? AND dimension = ? AND cost_view = ?"
    total = r.query(f"SELECT COUNT(*) FROM cost_forecasts{where}", args)[0][0]
    rows = r.query(
        "SELECT series_key, currency, as_of, days_left, to_date, forecast, lo80, hi80, lo95, hi95, replays "
        f"FROM cost_forecasts{where} ORDER BY forecast DESC, series_key, currency LIMIT ? OFFSET ?",
        [*args, page.size, page.offset],
    )
    items = [
        {
            "key": k,
            "currency": cur,
            "as_of": _iso(asof),
            "days_left": left,
            "to_date": money(td),
            "forecast": money(fc),
            **{b: money(v) for b, v in zip(_BANDS, bands, strict=True)},
            "replays": rep,
        }
        for k, cur, asof, left, td, fc, *bands, rep in rows
    ]
    periods = [
        p
        for (p,) in r.query(
            "SELECT DISTINCT billing_period FROM cost_forecasts WHERE dimension = ? ORDER BY 1 DESC LIMIT 24",
            [dimension],
        )
    ]
    return page.wrap(items, total, period=period, dimension=dimension, view=view, periods=periods)


def budgets(r: Reader, *, period: str | None, configured: list[Any]) -> dict[str, Any]:
    """Every configured budget with its month's actual, forecast and the thresholds it crossed."""
    have = r.has("budget_status")
    if have and period is None:
        period = _latest_period(r, "budget_status")
    status: dict[str, dict[str, Any]] = {}
    crossed: dict[str, list[dict[str, Any]]] = {}
    if have and period:
        for row in r.query(
            "SELECT budget, amount, actual, forecast, lo80, hi80, lo95, hi95, as_of, days_left, "
            "currency FROM budget_status WHERE billing_period = ?",
            [period],
        ):
            name, amount, actual, fc, *bands, as_of, left, cur = row
            status[name] = {
                "amount_recorded": money(amount),
                "actual": money(actual),
                "forecast": money(fc),
                **{b: money(v) for b, v in zip(_BANDS, bands, strict=True)},
                "as_of": _iso(as_of),
                "days_left": left,
                "status_currency": cur,
            }
        if r.has("budget_alerts"):
            for name, basis, pct, observed, at, alerted in r.query(
                "SELECT budget, basis, threshold_pct, observed, first_crossed_at, alerted_at FROM budget_alerts "
                "WHERE billing_period = ? ORDER BY budget, basis, threshold_pct",
                [period],
            ):
                crossed.setdefault(name, []).append(
                    {
                        "basis": basis,
                        "threshold_pct": pct,
                        "observed": money(observed),
                        "crossed_at": _iso(at),
                        "alerted_at": _iso(alerted),
                    }
                )
    items = []
    for b in configured:
        s = status.get(b.name, {})
        actual = s.get("actual")
        items.append(
            {
                "name": b.name,
                "scope": b.scope,
                "scope_value": b.scope_value,
                "kind": b.kind,
                "team": b.route_team,
                "amount": money(b.amount),
                "currency": b.currency,
                "cost_view": b.cost_view,
                **s,
                "actual_pct": _pct(actual, b.amount),
                "forecast_pct": _pct(s.get("forecast"), b.amount),
                "crossed": crossed.get(b.name, []),
            }
        )
    if not items:
        return empty(
            "no budgets configured: add them under `budgets:` in finops.yaml", period=period, items=[]
        )
    periods = (
        [p for (p,) in r.query("SELECT DISTINCT billing_period FROM budget_status ORDER BY 1 DESC LIMIT 24")]
        if have
        else []
    )
    return {"empty": False, "period": period, "periods": periods, "items": items}


def _pct(v: str | None, amount: Any) -> float | None:
    from decimal import Decimal

    if v is None or not amount:
        return None
    return round(float(Decimal(v) * 100 / Decimal(amount)), 1)


def feedback_summary(r: Reader, limit: int = 500) -> dict[str, Any]:
    """The precision people report, and the latest label of the most recently labelled anomalies."""
    from finops.anomaly.feedback import precision

    if not r.has("anomaly_feedback"):
        return {**empty("table anomaly_feedback does not exist yet"), **precision({}), "labels": {}}
    latest: dict[str, dict[str, Any]] = {}
    for aid, label, note, until, by, at in r.query(
        "SELECT anomaly_id, label, note, snooze_until, created_by, created_at FROM anomaly_feedback "
        "ORDER BY created_at, feedback_id"
    ):
        latest[aid] = {
            "label": label,
            "note": note,
            "snooze_until": _iso(until),
            "created_by": by,
            "created_at": _iso(at),
        }
    recent = dict(sorted(latest.items(), key=lambda kv: kv[1]["created_at"] or "", reverse=True)[:limit])
    return {"empty": not latest, **precision(latest), "labels": recent}
