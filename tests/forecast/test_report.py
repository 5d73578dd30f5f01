"""The monthly team report carries the month in progress: its month-end forecast with intervals
and the team's budgets, escaped like the rest of the report, without changing what counts as a
new report (a moved forecast does not re-send an unchanged month)."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

from finops.allocation.report import build_reports
from finops.budgets.store import run_budgets
from finops.config import parse_config
from finops.forecast.store import run_forecasts
from tests.fixtures.budgets import HOSTILE_TEAM, seed_showback


def _chargeback(wh, team: str, total: Decimal) -> None:
    wh.execute(
        "INSERT INTO chargeback_monthly VALUES ('2026-02', 'amortised', ?, NULL, 'USD', ?, 0, 0, ?, 0, 0, ?, ?, ?)",
        [team, total, total, total, total * 100, datetime(2026, 3, 1)],
    )


def test_report_shows_the_forecast_and_budgets_of_the_month_in_progress(any_wh):
    wh = any_wh
    cfg = parse_config(
        {
            "budgets": {
                "items": [
                    {"name": "ml-gpu", "team": "ml", "kind": "gpu", "amount": 3000},
                    {"name": "hostile", "team": HOSTILE_TEAM, "amount": 10},
                ]
            }
        }
    )
    for team in ("ml", HOSTILE_TEAM):
        total = seed_showback(wh, team, date(2026, 1, 1), 73, Decimal("100.00"))  # Jan 1 .. Mar 14
        _chargeback(wh, team, total - 31 * Decimal(100) - 14 * Decimal(100))  # February's share
    run_forecasts(wh, today=date(2026, 3, 15), now=datetime(2026, 3, 15, 6))
    run_budgets(wh, cfg.budgets, today=date(2026, 3, 15), now=datetime(2026, 3, 15, 6), deliver=False)
    reports = {r.team: r for r in build_reports(wh, "2026-02")}
    ml = reports["ml"]
    (fc,) = ml.forecast
    assert (fc["period"], fc["to_date"], fc["forecast"]) == (
        "2026-03",
        Decimal("1400.00"),
        Decimal("3100.00"),
    )
    assert ml.budgets == [
        {
            "budget": "ml-gpu",
            "period": "2026-03",
            "kind": "gpu",
            "currency": "USD",
            "amount": Decimal("3000.00"),
            "actual": Decimal("1400.00"),
            "forecast": Decimal("3100.00"),
        }
    ]
    html = ml.html(None)
    assert "Month-end forecast" in html and "<b>3100.00</b>" in html and "ml-gpu" in html
    hostile = reports[HOSTILE_TEAM].html(None)
    assert "<img src=x" not in hostile and "&lt;img src=x onerror=alert(1)&gt;" in hostile
    key = ml.dedup_key()
    run_forecasts(wh, today=date(2026, 3, 14), now=datetime(2026, 3, 14, 6))  # another as-of: other forecast
    again = {r.team: r for r in build_reports(wh, "2026-02")}["ml"]
    assert again.dedup_key() == key
