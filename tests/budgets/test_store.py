"""Budgets end to end on real warehouses (DuckDB and PostgreSQL): showback -> actual + month-end
forecast -> budget_status / budget_alerts -> Slack (local webhook) and e-mail (aiosmtpd), routed
per team, once per threshold per month, escaped for each medium."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from decimal import Decimal

from finops.alerts.dedup import AlertLedger
from finops.alerts.routing import register_configured_sinks
from finops.budgets.store import run_budgets
from finops.config import AlertRoute, AlertsConfig, parse_config
from tests.fixtures.budgets import HOSTILE_TEAM, seed_showback

FIRST = date(2025, 12, 15)
TODAY = date(2026, 3, 15)  # data through 2026-03-14: 14 days of March seen, 17 left


def _budgets(items):
    return parse_config({"budgets": {"items": items}}).budgets


def _routes(slack, smtp):
    return AlertsConfig(
        routes=[
            AlertRoute(team="ml", slack_conn_id=slack.conn_id),
            AlertRoute(team="data", email_conn_id=smtp.conn_id, email_to=["data-leads@example.com"]),
            AlertRoute(
                team=HOSTILE_TEAM,
                slack_conn_id=slack.conn_id,
                email_conn_id=smtp.conn_id,
                email_to=["finops@example.com"],
            ),
        ]
    )


def test_forecast_crossing_alerts_before_the_overspend_once_per_threshold(
    any_wh, alert_slack, alert_smtp, alert_sinks, monkeypatch
):
    wh = any_wh
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.example.com")
    seed_showback(wh, "ml", FIRST, (TODAY - FIRST).days, Decimal("100.00"))
    seed_showback(wh, "data", FIRST, (TODAY - FIRST).days, Decimal("10.00"), line="storage")
    alert_slack.server.expect_request(alert_slack.path, method="POST").respond_with_data("ok")
    register_configured_sinks(_routes(alert_slack, alert_smtp), AlertLedger(wh))
    cfg = _budgets(
        [
            {"name": "ml-gpu", "team": "ml", "kind": "gpu", "amount": 3000},
            {"name": "data", "team": "data", "amount": 1000},
        ]
    )

    first = run_budgets(wh, cfg, now=datetime(2026, 3, 15, 6), today=TODAY)
    # ml: 1400 spent (47 %), forecast 1400 + 17 x 100 = 3100 (103 %): the forecast crosses 80 and 100,
    # the actual nothing yet: ONE alert, for the highest threshold, naming both
    status = first.status["ml-gpu"]
    assert status["period"] == "2026-03" and Decimal(status["actual"]) == Decimal("1400")
    assert Decimal(status["forecast"]) == Decimal("3100.00")
    assert sorted(first.crossed) == ["ml-gpu:2026-03:forecast:100", "ml-gpu:2026-03:forecast:80"]
    assert first.alerted == ["budget:ml-gpu:2026-03:forecast:100"]
    (payload,) = alert_slack.payloads()
    text = json.dumps(payload)
    assert "forecast at 103.3 % of 3,000.00 USD" in text and "forecast 80 %, forecast 100 %" in text
    button = [b for b in payload["blocks"] if b["type"] == "actions"][0]["elements"][0]
    assert button["url"] == "https://airflow.example.com/finops/?budget=ml-gpu#budgets"
    assert alert_smtp.messages == []  # the data team (its own route) is well within its budget
    row = wh.query(
        "SELECT actual, forecast, lo80, hi80, lo95, hi95, days_left FROM budget_status "
        "WHERE budget = 'ml-gpu' AND billing_period = '2026-03'"
    )[0]
    assert row[0] == Decimal("1400") and row[6] == 17 and row[4] <= row[2] <= row[1] <= row[3] <= row[5]

    # the same data again: nothing new anywhere
    again = run_budgets(wh, cfg, now=datetime(2026, 3, 15, 7), today=TODAY)
    assert again.crossed == [] and again.alerted == []
    assert len(alert_slack.payloads()) == 1

    # a week later: 2100 spent (70 %) crosses actual 50 %: one alert for it, the forecast ones stay sent
    seed_showback(wh, "ml", TODAY, 7, Decimal("100.00"))
    later = run_budgets(wh, cfg, now=datetime(2026, 3, 22, 6), today=date(2026, 3, 22))
    assert later.crossed == ["ml-gpu:2026-03:actual:50"] and later.alerted == [
        "budget:ml-gpu:2026-03:actual:50"
    ]
    assert len(alert_slack.payloads()) == 2
    assert run_budgets(wh, cfg, now=datetime(2026, 3, 22, 7), today=date(2026, 3, 22)).alerted == []
    rows = wh.query(
        "SELECT basis, threshold_pct, alerted_at IS NOT NULL FROM budget_alerts WHERE budget = 'ml-gpu' "
        "ORDER BY basis, threshold_pct"
    )
    assert rows == [("actual", 50, True), ("forecast", 80, True), ("forecast", 100, True)]


def test_routed_per_team_and_hostile_names_escaped(any_wh, alert_slack, alert_smtp, alert_sinks):
    wh = any_wh
    seed_showback(wh, HOSTILE_TEAM, FIRST, (TODAY - FIRST).days, Decimal("50.00"), line="compute")
    seed_showback(wh, "data", FIRST, (TODAY - FIRST).days, Decimal("60.00"), line="storage")
    alert_slack.server.expect_request(alert_slack.path, method="POST").respond_with_data("ok")
    register_configured_sinks(_routes(alert_slack, alert_smtp), AlertLedger(wh))
    cfg = _budgets(
        [
            {"name": "hostile", "team": HOSTILE_TEAM, "amount": 500},
            {"name": "data", "team": "data", "amount": 1000},
        ]
    )
    res = run_budgets(wh, cfg, now=datetime(2026, 3, 15, 6), today=TODAY)
    # hostile: 700 of 500 spent -> actual 50/80/100 and forecast 80/100; data: 840 of 1000 -> actual 50/80,
    # forecast 80/100: one alert per budget and basis
    assert sorted(res.alerted) == [
        "budget:data:2026-03:actual:80",
        "budget:data:2026-03:forecast:100",
        "budget:hostile:2026-03:actual:100",
        "budget:hostile:2026-03:forecast:100",
    ]
    slack = json.dumps(alert_slack.payloads())
    assert len(alert_slack.payloads()) == 2  # the data team has no Slack route
    assert "<!channel>" not in slack and "<img" not in slack and "&lt;!channel&gt;" in slack
    to = sorted(tuple(rcpt) for _, rcpt in alert_smtp.envelopes)
    assert to == [("data-leads@example.com",)] * 2 + [("finops@example.com",)] * 2
    for msg in alert_smtp.messages:
        html = msg.get_body(("html",)).get_content()
        assert "<img src=x" not in html and "<!channel>" not in html
        assert "\n" not in str(msg["Subject"]) and "\r" not in str(msg["Subject"])
    hostile_html = [m for m in alert_smtp.messages if "hostile" in str(m["Subject"])][0]
    assert "&lt;img src=x onerror=alert(1)&gt;" in hostile_html.get_body(("html",)).get_content()
    body = [p for p in hostile_html.iter_attachments()][0].get_content()
    csv = body.decode() if isinstance(body, bytes) else body  # SmtpHook attaches files as octet-stream
    assert not any(cell.startswith(("=", '"=')) for line in csv.splitlines() for cell in line.split(","))


def test_dry_run_records_then_a_later_run_delivers(duckdb_wh, alert_slack, alert_sinks):
    wh = duckdb_wh
    seed_showback(wh, "ml", FIRST, (TODAY - FIRST).days, Decimal("100.00"))
    cfg = _budgets([{"name": "ml-gpu", "team": "ml", "kind": "gpu", "amount": 1000}])
    dry = run_budgets(wh, cfg, now=datetime(2026, 3, 15, 6), today=TODAY, deliver=False)
    assert dry.alerted == [] and len(dry.crossed) == 5
    assert wh.query("SELECT COUNT(*) FROM budget_alerts WHERE alerted_at IS NULL")[0][0] == 5
    alert_slack.server.expect_request(alert_slack.path, method="POST").respond_with_data("ok")
    register_configured_sinks(
        AlertsConfig(routes=[AlertRoute(team="ml", slack_conn_id=alert_slack.conn_id)]), AlertLedger(wh)
    )
    live = run_budgets(wh, cfg, now=datetime(2026, 3, 15, 7), today=TODAY)
    assert live.crossed == [] and len(live.alerted) == 2 and len(alert_slack.payloads()) == 2
    assert wh.query("SELECT COUNT(*) FROM budget_alerts WHERE alerted_at IS NULL")[0][0] == 0


def test_account_budget_reads_focus_costs(duckdb_wh, alerts):
    from tests.fixtures.focus_data import focus_row, insert_focus

    wh = duckdb_wh
    rows = [
        focus_row((FIRST + timedelta(days=i)).isoformat(), "40.00", sub_account_id="222222222222")
        for i in range((TODAY - FIRST).days)
    ]
    rows += [
        focus_row((FIRST + timedelta(days=i)).isoformat(), "7.00", sub_account_id="333333333333")
        for i in range((TODAY - FIRST).days)
    ]
    insert_focus(wh, rows)
    cfg = _budgets([{"name": "acct", "account": "222222222222", "amount": 1000, "notify_team": "platform"}])
    res = run_budgets(wh, cfg, now=datetime(2026, 3, 15, 6), today=TODAY)
    assert Decimal(res.status["acct"]["actual"]) == Decimal(
        "560"
    )  # 14 days x 40, the other account not counted
    assert Decimal(res.status["acct"]["forecast"]) == Decimal("1240.00")
    assert [e.team for e in alerts] == ["platform", "platform"]  # actual 50 % and forecast 100 %
