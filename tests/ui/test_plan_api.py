"""The planning pages and the one write of the FinOps app, through FastAPI's TestClient with
Airflow's real SimpleAuthManager JWTs: feedback on anomalies (login, permission, CSRF checks,
the label kept with the logged-in user), forecasts and budget vs actual vs forecast, on DuckDB
and PostgreSQL."""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal

import pytest

from finops.budgets.store import run_budgets
from finops.forecast.store import run_forecasts
from tests.fixtures.budgets import HOSTILE_TEAM
from tests.fixtures.ui import ui_seed

FEEDBACK = "/api/anomalies/an-1/feedback"
JSON = {"Content-Type": "application/json"}
BUDGETS = {
    "budgets": {
        "items": [
            {"name": "ml-research", "team": "ml-research", "amount": 5000},
            {"name": "hostile", "team": HOSTILE_TEAM, "amount": 100},
            {"name": "no-spend", "account": "999", "amount": 1},
        ]
    }
}


def _config(tmp_path, monkeypatch, extra: dict | None = None) -> None:
    from finops.config import parse_config

    data = {**BUDGETS, **(extra or {})}
    p = tmp_path / "finops.yaml"
    p.write_text(json.dumps(data))
    monkeypatch.setenv("FINOPS_CONFIG", str(p))
    return parse_config(data)


def _plan(wh, cfg) -> None:
    """Forecasts and budgets as finops_budgets computes them, mid-March 2025."""
    run_forecasts(wh, today=date(2025, 3, 20), now=datetime(2025, 3, 20, 6))
    run_budgets(wh, cfg.budgets, now=datetime(2025, 3, 20, 6), today=date(2025, 3, 20), deliver=False)


@pytest.fixture
def seeded(duckdb_wh, tmp_path, monkeypatch):
    ui_seed(duckdb_wh)
    cfg = _config(tmp_path, monkeypatch)
    # the hostile team spends too, in showback
    duckdb_wh.execute(
        "INSERT INTO showback_daily SELECT day, billing_period, cost_view, ?, cost_centre, allocation, "
        "rule, provider, billing_account_id, sub_account_id, service_name, line, currency, cost, "
        "computed_at FROM showback_daily WHERE team = 'data-eng'",
        [HOSTILE_TEAM],
    )
    _plan(duckdb_wh, cfg)
    return duckdb_wh


def test_feedback_needs_a_login(ui_client, ui_auth, finops_home):
    r = ui_client.post(FEEDBACK, json={"label": "expected"}, headers={"Accept": "application/json"})
    assert r.status_code == 401
    nobody = ui_auth.token(role=None, username="nobody")  # logged in, no FinOps permission
    r = ui_client.post(FEEDBACK, json={"label": "expected"}, headers={"Authorization": f"Bearer {nobody}"})
    assert r.status_code == 403


def test_feedback_is_kept_with_the_logged_in_user(ui_client, ui_headers, seeded):
    body = {"label": "snoozed", "note": "<script>alert(1)</script> load test", "snooze_until": "2099-01-01"}
    r = ui_client.post(FEEDBACK, json={**body, "snooze_until": str(date.today())}, headers=ui_headers)
    assert r.status_code == 201, r.text
    assert r.json()["created_by"] == "analyst" and r.json()["label"] == "snoozed"
    r = ui_client.post(FEEDBACK, json={"label": "expected", "created_by": "mallory"}, headers=ui_headers)
    assert r.status_code == 422  # no field names the user: it is the login's
    assert ui_client.post(FEEDBACK, json=body, headers=ui_headers).status_code == 422  # > 366 days ahead
    assert (
        ui_client.post(
            "/api/anomalies/an-404/feedback", json={"label": "expected"}, headers=ui_headers
        ).status_code
        == 404
    )
    ok = ui_client.post(FEEDBACK, json={"label": "expected", "note": "planned"}, headers=ui_headers)
    assert ok.status_code == 201
    rows = seeded.query("SELECT label, note, created_by FROM anomaly_feedback ORDER BY created_at")
    assert rows == [
        ("snoozed", "<script>alert(1)</script> load test", "analyst"),
        ("expected", "planned", "analyst"),
    ]
    summary = ui_client.get("/api/anomaly-feedback", headers=ui_headers).json()
    assert summary["labels"]["an-1"]["label"] == "expected"
    assert (summary["labelled"], summary["precision"]) == (1, 0.0)


CROSS_SITE = [
    ({"Content-Type": "application/x-www-form-urlencoded"}, 415),  # a cross-site <form> can send this
    ({"Content-Type": "text/plain"}, 415),
    ({**JSON, "Origin": "https://evil.example"}, 403),
    ({**JSON, "Sec-Fetch-Site": "cross-site"}, 403),
    ({**JSON, "Sec-Fetch-Site": "same-site"}, 403),
]


def test_cross_site_writes_are_refused(ui_client, ui_auth, seeded):
    ui_client.cookies.set("_token", ui_auth.token())  # the browser's cookie login rides along cross-site
    try:
        for headers, status in CROSS_SITE:
            r = ui_client.post(FEEDBACK, content=json.dumps({"label": "expected"}), headers=headers)
            assert r.status_code == status, (headers, r.text)
        same = ui_client.post(
            FEEDBACK,
            content=json.dumps({"label": "acknowledged"}),
            headers={**JSON, "Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"},
        )
        assert same.status_code == 201, same.text
    finally:
        ui_client.cookies.clear()
    assert seeded.query("SELECT label FROM anomaly_feedback") == [("acknowledged",)]


def test_other_writes_stay_refused(ui_client, ui_headers, finops_home):
    for method, path in (
        ("POST", "/api/showback"),
        ("PUT", FEEDBACK),
        ("DELETE", FEEDBACK),
        ("POST", "/api/anomalies/an-1/feedback/x"),
    ):
        assert ui_client.request(method, path, headers={**ui_headers, **JSON}, json={}).status_code in (
            404,
            405,
        )


def test_forecasts_page(ui_client, ui_headers, seeded):
    data = ui_client.get("/api/forecasts", headers=ui_headers, params={"dimension": "team"}).json()
    assert data["period"] == "2025-03" and data["periods"] == ["2025-03"]
    rows = {r["key"]: r for r in data["items"]}
    ml = rows["ml-research"]
    # 19 days seen at 100.25 a day, 12 left: flat series, exact forecast, no interval width
    assert (ml["to_date"], ml["forecast"], ml["days_left"]) == ("1904.75", "3107.75", 12)
    assert ml["lo95"] == ml["hi95"] == "3107.75" and HOSTILE_TEAM in rows
    svc = ui_client.get("/api/forecasts", headers=ui_headers, params={"dimension": "service"}).json()
    assert {r["key"] for r in svc["items"]} >= {"aws / Amazon EC2", "google cloud / BigQuery"}
    bad = ui_client.get("/api/forecasts", headers=ui_headers, params={"dimension": "team; DROP TABLE x"})
    assert bad.status_code == 422


def test_budgets_page(ui_client, ui_headers, seeded):
    data = ui_client.get("/api/budgets", headers=ui_headers).json()
    assert data["period"] == "2025-03"
    items = {b["name"]: b for b in data["items"]}
    ml = items["ml-research"]
    assert (ml["amount"], ml["actual"], ml["forecast"], ml["forecast_pct"]) == (
        "5000.00",
        "1904.75",
        "3107.75",
        62.2,
    )
    assert [c["threshold_pct"] for c in ml["crossed"]] == []
    hostile = items["hostile"]
    assert hostile["scope_value"] == HOSTILE_TEAM and Decimal(hostile["actual"]) == Decimal("25.10") * 19
    assert {(c["basis"], c["threshold_pct"]) for c in hostile["crossed"]} == {
        ("actual", 50),
        ("actual", 80),
        ("actual", 100),
        ("forecast", 80),
        ("forecast", 100),
    }
    assert all(c["alerted_at"] is None for c in hostile["crossed"])  # the dry run recorded, sent nothing
    assert (items["no-spend"]["actual"], items["no-spend"]["forecast"]) == ("0.00", "0.00")  # no spend: zero
    one = ui_client.get("/api/budgets", headers=ui_headers, params={"name": "hostile"}).json()
    assert [b["name"] for b in one["items"]] == ["hostile"]


def test_budget_page_without_budgets_or_tables(ui_client, ui_headers, finops_home, tmp_path, monkeypatch):
    p = tmp_path / "empty.yaml"
    p.write_text("{}")
    monkeypatch.setenv("FINOPS_CONFIG", str(p))
    assert ui_client.get("/api/budgets", headers=ui_headers).json()["empty"] is True
    assert ui_client.get("/api/forecasts", headers=ui_headers).json()["empty"] is True
    assert ui_client.get("/api/anomaly-feedback", headers=ui_headers).json()["labelled"] == 0


@pytest.mark.postgres
def test_postgres_feedback_and_budgets(ui_client, ui_headers, pg_wh, pg_conn_id, tmp_path, monkeypatch):
    ui_seed(pg_wh)
    cfg = _config(
        tmp_path, monkeypatch, {"warehouse": {"conn_id": pg_conn_id.conn_id, "schema": pg_wh.schema}}
    )
    _plan(pg_wh, cfg)
    r = ui_client.post(FEEDBACK, json={"label": "acknowledged", "note": "real"}, headers=ui_headers)
    assert r.status_code == 201, r.text
    assert pg_wh.query("SELECT label, created_by FROM anomaly_feedback") == [("acknowledged", "analyst")]
    assert ui_client.get("/api/anomaly-feedback", headers=ui_headers).json()["precision"] == 1.0
    items = {b["name"]: b for b in ui_client.get("/api/budgets", headers=ui_headers).json()["items"]}
    assert items["ml-research"]["forecast"] == "3107.75"
