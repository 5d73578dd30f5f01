"""Forecasts per team / service / account written to cost_forecasts on real warehouses."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal

from finops.forecast.store import as_of_day, run_forecasts
from tests.fixtures.budgets import seed_showback
from tests.fixtures.focus_data import focus_row, insert_focus

FIRST = date(2026, 1, 1)


def test_team_service_account_forecasts_and_rerun_changes_nothing(any_wh):
    wh = any_wh
    seed_showback(wh, "ml", FIRST, 75, lambda d: Decimal("100.00") if d.weekday() < 5 else Decimal("20.00"))
    seed_showback(wh, "data", FIRST, 75, Decimal("33.33"), line="storage")
    insert_focus(
        wh,
        [
            focus_row((FIRST + timedelta(days=i)).isoformat(), "12.50", sub_account_id="222222222222")
            for i in range(75)
        ],
    )
    # data through 2026-03-16; today 2026-03-16: that day may be partial, so as of the 15th
    assert as_of_day(date(2026, 3, 16), date(2026, 3, 16)) == date(2026, 3, 15)
    out = run_forecasts(wh, today=date(2026, 3, 16), now=datetime(2026, 3, 16, 6))
    assert out["team"] == {"series": 2, "as_of": "2026-03-15", "period": "2026-03"}
    rows = {
        r[0]: r[1:]
        for r in wh.query(
            "SELECT series_key, to_date, forecast, lo80, hi80, lo95, hi95, days_left FROM cost_forecasts "
            "WHERE dimension = 'team' AND billing_period = '2026-03' AND cost_view = 'amortised'"
        )
    }
    to_date, fc, lo80, hi80, lo95, hi95, left = rows["ml"]
    # March 1-15 2026: 10 weekdays + 5 weekend days; 16-31: 12 weekdays + 4 weekend days
    assert to_date == Decimal("1100") and left == 16
    assert fc == Decimal("1100") + 12 * Decimal("100") + 4 * Decimal("20")
    assert lo95 <= lo80 <= fc <= hi80 <= hi95
    assert rows["data"][0] == Decimal("33.33") * 15  # exact to the cent, summed in Decimal
    svc = wh.query("SELECT series_key, to_date FROM cost_forecasts WHERE dimension = 'service'")
    assert svc == [("aws / Amazon Elastic Compute Cloud", Decimal("12.50") * 15)]
    assert wh.query("SELECT series_key FROM cost_forecasts WHERE dimension = 'account'") == [
        ("222222222222",)
    ]
    before = wh.query("SELECT * FROM cost_forecasts ORDER BY 1, 2, 3, 4, 5")
    run_forecasts(wh, today=date(2026, 3, 16), now=datetime(2026, 3, 16, 6))
    assert wh.query("SELECT * FROM cost_forecasts ORDER BY 1, 2, 3, 4, 5") == before
