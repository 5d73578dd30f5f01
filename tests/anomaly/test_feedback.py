"""Feedback on anomalies, on a real DuckDB warehouse with the local Slack webhook: a label is
kept (who, when, note), marked-expected and snoozed anomalies do not alert, the precision
people report counts acknowledged vs expected, and the alert links to the FinOps view."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

import numpy as np
import pytest

from finops.alerts.dedup import AlertLedger
from finops.alerts.routing import register_configured_sinks
from finops.anomaly.feedback import FeedbackError, latest_labels, precision, record, suppression
from finops.anomaly.settings import parse_settings
from finops.anomaly.state import Anomaly
from finops.anomaly.store import run_anomalies
from finops.config import AlertRoute, AlertsConfig
from tests.fixtures.focus_data import focus_row, insert_focus

START = date(2026, 7, 1)
DAYS = 100
NOW = datetime(2026, 10, 9, 6)
SETTINGS = parse_settings({"lookback_days": 90, "monitors": [{"type": "service"}, {"type": "account"}]})


def _seed(wh, spike_day: int = DAYS - 1):
    rng = np.random.default_rng(5)
    rows = []
    for i in range(DAYS):
        d = START + timedelta(days=i)
        base = 800 * (0.5 if d.weekday() >= 5 else 1.0) * float(np.exp(rng.normal(0, 0.03)))
        rows.append(focus_row(d.isoformat(), f"{base:.2f}", tags={"team": "ml"}, resource_id="i-steady"))
        if i == spike_day:
            rows.append(
                focus_row(
                    d.isoformat(), "2400.00", x_usage_type="SpotUsage:p5.48xlarge", resource_id="i-burst"
                )
            )
    insert_focus(wh, rows)


def _slack(wh, alert_slack):
    alert_slack.server.expect_request(alert_slack.path, method="POST").respond_with_data("ok")
    register_configured_sinks(
        AlertsConfig(routes=[AlertRoute(team="*", slack_conn_id=alert_slack.conn_id)]), AlertLedger(wh)
    )


def test_expected_and_snoozed_anomalies_do_not_alert(duckdb_wh, alert_slack, alert_sinks):
    wh = duckdb_wh
    _seed(wh)
    dry = run_anomalies(wh, SETTINGS, now=NOW, deliver=False)  # detected, nothing sent yet
    assert len(dry.new) == 2
    ids = dict(wh.query("SELECT monitor_type, anomaly_id FROM anomalies"))
    record(wh, ids["service"], "expected", "alice", note="planned p5 burst <b>", now=NOW)
    record(wh, ids["account"], "snoozed", "bob", snooze_until=date(2026, 10, 20), now=NOW)
    _slack(wh, alert_slack)
    live = run_anomalies(wh, SETTINGS, now=NOW + timedelta(hours=1))
    assert live.alerted == [] and alert_slack.payloads() == []
    assert live.suppressed == {
        ids["service"]: "marked expected",
        ids["account"]: "monitor snoozed until 2026-10-20",
    }
    # still pending, not marked alerted: the label, not a fake delivery, keeps them quiet
    assert wh.query("SELECT COUNT(*) FROM anomalies WHERE alerted_at IS NULL")[0][0] == 2
    # a later label wins: acknowledging the service anomaly lets its alert out
    record(wh, ids["service"], "acknowledged", "alice", now=NOW + timedelta(hours=2))
    again = run_anomalies(wh, SETTINGS, now=NOW + timedelta(hours=3))
    assert again.alerted == [ids["service"]] and len(alert_slack.payloads()) == 1
    labels = latest_labels(wh)
    assert labels[ids["account"]]["created_by"] == "bob"
    assert precision(labels) == {"labelled": 1, "true_alerts": 1, "false_alerts": 0, "precision": 1.0}
    rows = wh.query("SELECT label, note, created_by FROM anomaly_feedback ORDER BY created_at")
    assert rows == [
        ("expected", "planned p5 burst <b>", "alice"),
        ("snoozed", None, "bob"),
        ("acknowledged", None, "alice"),
    ]


def test_alert_links_to_the_view_for_feedback(duckdb_wh, alert_slack, alert_smtp, alert_sinks, monkeypatch):
    wh = duckdb_wh
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.example.com/")
    _seed(wh)
    alert_slack.server.expect_request(alert_slack.path, method="POST").respond_with_data("ok")
    register_configured_sinks(
        AlertsConfig(
            routes=[
                AlertRoute(
                    team="*",
                    slack_conn_id=alert_slack.conn_id,
                    email_conn_id=alert_smtp.conn_id,
                    email_to=["finops@example.com"],
                )
            ]
        ),
        AlertLedger(wh),
    )
    res = run_anomalies(wh, SETTINGS.model_copy(update={"monitors": SETTINGS.monitors[:1]}), now=NOW)
    (aid,) = res.alerted
    url = f"https://airflow.example.com/finops/?anomaly={aid}#anomalies"
    (payload,) = alert_slack.payloads()
    buttons = [b for b in payload["blocks"] if b["type"] == "actions"][0]["elements"]
    assert buttons[0]["url"] == url and buttons[0]["text"]["text"] == "Acknowledge, mark expected or snooze"
    (msg,) = alert_smtp.messages
    assert f'href="{url.replace("&", "&amp;")}"' in msg.get_body(("html",)).get_content()


def test_no_base_url_no_link(monkeypatch):
    from finops.anomaly.render import alert_event

    monkeypatch.delenv("AIRFLOW__API__BASE_URL", raising=False)
    a = _anomaly(date(2026, 10, 1))
    assert alert_event(a).links == {}
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "javascript:alert(1)")
    assert alert_event(a).links == {}


def _anomaly(start: date) -> Anomaly:
    from decimal import Decimal

    return Anomaly(
        "anm-1",
        "team",
        "ml",
        "amortised",
        "USD",
        "open",
        start,
        start,
        start,
        Decimal(900),
        Decimal(300),
        Decimal(600),
        Decimal(600),
        2.0,
        9.0,
        "critical",
        datetime(2026, 10, 1),
        datetime(2026, 10, 1),
    )


def test_snooze_window_is_by_start_day():
    a = _anomaly(date(2026, 10, 10))
    assert suppression(a, None, [date(2026, 10, 9)]) is None  # the snooze ended before it started
    assert suppression(a, None, [date(2026, 10, 10)]) == "monitor snoozed until 2026-10-10"
    assert suppression(a, "acknowledged", []) is None
    assert suppression(a, "expected", []) == "marked expected"


@pytest.mark.parametrize(
    ("label", "until", "why"),
    [
        ("ignored", None, "label must be one of"),
        ("snoozed", None, "snooze_until is required"),
        ("snoozed", date(2026, 10, 8), "between today"),
        ("snoozed", date(2028, 1, 1), "between today"),
        ("expected", date(2026, 10, 20), "only goes with the label 'snoozed'"),
    ],
)
def test_bad_feedback_is_refused(duckdb_wh, label, until, why):
    wh = duckdb_wh
    wh.execute(
        "INSERT INTO anomalies (anomaly_id, monitor_type, monitor_key, cost_view, status, start_day, last_day, "
        "peak_day, actual, expected, delta, total_impact, severity, first_detected_at, updated_at) VALUES "
        "('anm-1', 'team', 'ml', 'amortised', 'open', '2026-10-01', '2026-10-01', '2026-10-01', 1, 1, 0, 0, "
        "'warning', '2026-10-01', '2026-10-01')"
    )
    with pytest.raises(FeedbackError, match=why):
        record(wh, "anm-1", label, "alice", snooze_until=until, now=NOW)
    with pytest.raises(FeedbackError, match="no anomaly with id"):
        record(wh, "anm-nope", "expected", "alice", now=NOW)
    assert json.dumps(wh.query("SELECT COUNT(*) FROM anomaly_feedback")) == "[[0]]"
