"""The Commitments page's JSON endpoints through FastAPI's TestClient with Airflow's real auth
manager, reading tables finops_commitments wrote from hand-written rows (the numbers are
the ones worked out in tests/commitments/test_store.py)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest

from finops.commitments.settings import parse_settings
from finops.commitments.store import WhatIf, purchase_advice, refresh_period, store_advice
from tests.fixtures.commitments import RI, RULES, SP, load_commitment_rows


@pytest.fixture
def seeded(duckdb_wh):
    load_commitment_rows(duckdb_wh)
    end = (datetime.now(UTC) + timedelta(days=100)).date().isoformat()  # the page counts from today
    settings = parse_settings({"inventory": [{"provider": "aws", "id": SP, "end": end}],
                               "advice": {"lookback_days": 7}})  # fmt: skip
    refresh_period(duckdb_wh, "2026-10", settings, RULES)
    # what if we buy 0.10 $/h of a Savings Plan against the one day of on-demand g5 usage
    res = purchase_advice(
        duckdb_wh, settings, date(2026, 10, 20), WhatIf("aws", "savings_plan", Decimal("0.10"))
    )
    store_advice(duckdb_wh, "run-1", res.advice, what_if=True)
    return duckdb_wh


def test_commitments_endpoints(ui_client, ui_headers, seeded):
    util = ui_client.get("/api/commitments/utilisation", headers=ui_headers).json()
    by_id = {i["commitment_id"]: i for i in util["items"]}
    assert util["period"] == "2026-10"
    assert (by_id[SP]["used"], by_id[SP]["unused"], by_id[SP]["utilisation"]) == ("9.00", "1.00", "0.9000")
    assert by_id[SP]["net_savings"] == "5.00"  # 15 of list price covered for 10
    assert (by_id[RI]["utilisation"], by_id[RI]["net_savings"]) == ("0.6250", "0.00")

    teams = ui_client.get("/api/commitments/coverage", params={"by": "team"}, headers=ui_headers).json()
    cov = {i["key"]: (i["covered_list"], i["eligible_list"], i["coverage"]) for i in teams["items"]}
    assert cov == {"data": ("5.00", "0.00", "1.0000"), "ml": ("10.00", "4.00", "0.7143"),
                   "platform": ("32.00", "0.00", "1.0000")}  # fmt: skip
    assert (
        ui_client.get("/api/commitments/coverage", params={"by": "x"}, headers=ui_headers).status_code == 422
    )

    cal = ui_client.get("/api/commitments/calendar", headers=ui_headers).json()
    assert [(i["commitment_id"], i["days_left"]) for i in cal["items"]] == [(SP, 100)]
    within = ui_client.get("/api/commitments/calendar", params={"within_days": 99}, headers=ui_headers).json()
    assert within == {"items": []}

    adv = ui_client.get("/api/commitments/advice", params={"what_if": True}, headers=ui_headers).json()
    assert "nothing is purchased" in adv["note"] and adv["what_if"] is True
    assert {(i["product"], i["term_years"], i["payment"]) for i in adv["items"]} == {
        ("savings_plan", t, p) for t in (1, 3) for p in ("no_upfront", "partial_upfront", "all_upfront")
    }
    assert all(i["commitment_hourly"] == "0.10" for i in adv["items"])
    assert (
        ui_client.get("/api/commitments/advice", headers=ui_headers).json()["empty"] is True
    )  # no regular run


def test_commitments_page_is_registered(ui_client, ui_headers):
    html = ui_client.get("/", headers=ui_headers).text
    assert 'id="commitments"' in html and "static/commitments.js" in html
    js = ui_client.get("/static/commitments.js", headers=ui_headers)
    assert js.status_code == 200 and 'api("commitments/advice")' in js.text
    assert ui_client.get("/api/commitments/utilisation").status_code == 401  # login needed like every page
