"""End to end on a real DuckDB warehouse: focus_costs -> anomalies -> routed Slack + email,
once. A second run over the same (or one more day of) data updates, never re-alerts."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal as D

from finops.alerts.dedup import AlertLedger
from finops.alerts.events import AlertEvent, emit
from finops.alerts.routing import register_configured_sinks, routes_for
from finops.anomaly.settings import Monitor, parse_settings
from finops.anomaly.store import run_anomalies
from finops.config import AlertRoute, AlertsConfig
from tests.fixtures.anomaly_costs import DAYS, START, seed_costs
from tests.fixtures.focus_data import focus_row, insert_focus


def test_routes_for_team_catch_all_and_default():
    cfg = AlertsConfig(
        routes=[AlertRoute(team="ml", slack_conn_id="a"), AlertRoute(team="*", slack_conn_id="b")],
        default_route=AlertRoute(slack_conn_id="c"),
    )
    assert [r.slack_conn_id for r in routes_for("ml", cfg)] == ["a", "b"]
    assert [r.slack_conn_id for r in routes_for(None, cfg)] == ["b"]
    only_default = AlertsConfig(
        routes=[AlertRoute(team="ml", slack_conn_id="a")], default_route=AlertRoute(slack_conn_id="c")
    )
    assert [r.slack_conn_id for r in routes_for("data", only_default)] == ["c"]


def test_anomaly_alerts_once_across_runs(duckdb_wh, alert_slack, alert_smtp, alert_sinks):
    wh = duckdb_wh
    seed_costs(wh)
    alert_slack.server.expect_request(alert_slack.path, method="POST").respond_with_data("ok")
    alerts = AlertsConfig(
        routes=[
            AlertRoute(
                team="*",
                slack_conn_id=alert_slack.conn_id,
                email_conn_id=alert_smtp.conn_id,
                email_to=["finops@example.com"],
            )
        ]
    )
    register_configured_sinks(alerts, AlertLedger(wh))
    settings = parse_settings({"lookback_days": 90, "monitors": [{"type": "service"}, {"type": "account"}]})
    first = run_anomalies(wh, settings, now=datetime(2026, 10, 9, 6))
    assert len(first.new) == 2 and first.alerted == sorted(first.new)  # service + account monitors
    row = wh.query(
        "SELECT monitor_type, monitor_key, start_day, actual, expected, severity, contributors, alerted_at "
        "FROM anomalies WHERE monitor_type = 'service'"
    )[0]
    assert row[1] == "aws / Amazon Elastic Compute Cloud" and row[2] == START + timedelta(days=DAYS - 1)
    assert row[3] > D(3000) and D(700) < row[4] < D(900) and row[7] is not None
    contrib = json.loads(row[6]) if isinstance(row[6], str) else row[6]
    assert contrib[0]["key"] == "SpotUsage:p5.48xlarge | i-<!channel>" and contrib[0]["share"] > 0.95
    bodies = alert_slack.payloads()
    assert len(bodies) == 2 and "<!channel>" not in json.dumps(bodies)
    assert "i-&lt;!channel&gt;" in json.dumps(bodies)
    assert len(alert_smtp.messages) == 2

    # same data again, then one more (normal) day: updates at most, no new alert anywhere
    second = run_anomalies(wh, settings, now=datetime(2026, 10, 9, 7))
    assert second.new == [] and second.alerted == []
    _seed_more = [focus_row((START + timedelta(days=DAYS)).isoformat(), "790.00", tags={"team": "ml"})]
    insert_focus(wh, _seed_more)
    third = run_anomalies(wh, settings, now=datetime(2026, 10, 10, 6))
    assert third.new == [] and third.alerted == []
    assert len(alert_slack.payloads()) == 2 and len(alert_smtp.messages) == 2
    assert wh.query("SELECT COUNT(*) FROM anomalies")[0][0] == 2
    # the delivery ledger also stops a producer that re-emits the same key
    emit(AlertEvent(kind="anomaly", title="again", dedup_key=first.new[0]))
    assert len(alert_slack.payloads()) == 2
    assert wh.query("SELECT COUNT(*) FROM alert_state")[0][0] == 4  # 2 anomalies x (slack, email)


def test_failed_delivery_stays_pending_and_is_retried(duckdb_wh, alert_slack, alert_sinks):
    wh = duckdb_wh
    seed_costs(wh)
    srv = alert_slack.server
    srv.expect_ordered_request(alert_slack.path, method="POST").respond_with_data("invalid_token", status=403)
    alerts = AlertsConfig(routes=[AlertRoute(team="*", slack_conn_id=alert_slack.conn_id)])
    register_configured_sinks(alerts, AlertLedger(wh))
    settings = parse_settings({"lookback_days": 90, "monitors": [Monitor(type="service").model_dump()]})
    first = run_anomalies(wh, settings)
    assert len(first.new) == 1 and first.alerted == [] and first.alert_errors == 1
    assert wh.query("SELECT alerted_at FROM anomalies")[0][0] is None
    srv.expect_ordered_request(alert_slack.path, method="POST").respond_with_data("ok")
    second = run_anomalies(wh, settings)
    assert second.new == [] and second.alerted == first.new


def test_team_and_tag_monitors(any_wh, alert_sinks):
    from finops.allocation.rules import parse_rules
    from finops.allocation.store import run_showback

    wh = any_wh
    seed_costs(wh)
    for period in ("2026-07", "2026-08", "2026-09", "2026-10"):
        run_showback(wh, period, parse_rules({}))
    settings = parse_settings(
        {"lookback_days": 90, "monitors": [{"type": "team"}, {"type": "tag", "tag_key": "team"}]}
    )
    res = run_anomalies(wh, settings)
    keys = {tuple(r) for r in wh.query("SELECT monitor_type, monitor_key FROM anomalies")}
    assert keys == {("team", "ml"), ("tag:team", "ml")}
    assert res.series == 4  # ml + data, for each monitor
    contrib = wh.query("SELECT contributors FROM anomalies WHERE monitor_type = 'team'")[0][0]
    contrib = json.loads(contrib) if isinstance(contrib, str) else contrib
    assert contrib[0]["key"] == "aws / Amazon Elastic Compute Cloud"


def test_focus_costs_and_showback_halves_keep_to_their_own_anomalies(any_wh, alert_sinks):
    """finops_anomalies (source focus_costs) and finops_anomalies_teams (source showback) are
    separate runs: neither scores, closes nor re-alerts the other's monitors, and the team half
    ends where the showback ends (a billing load not allocated yet is not a drop to zero)."""
    from finops.allocation.rules import parse_rules
    from finops.allocation.store import run_showback

    wh = any_wh
    seed_costs(wh)
    for period in ("2026-07", "2026-08", "2026-09", "2026-10"):
        run_showback(wh, period, parse_rules({}))
    settings = parse_settings({"lookback_days": 90, "monitors": [{"type": "service"}, {"type": "team"}]})
    spike = START + timedelta(days=DAYS - 1)

    costs = run_anomalies(wh, settings, source="focus_costs")
    assert {r[0] for r in wh.query("SELECT monitor_type FROM anomalies")} == {"service"}
    teams = run_anomalies(wh, settings, source="showback")
    assert teams.data_end == spike.isoformat() and len(teams.new) == 1 and teams.new != costs.new
    assert dict(wh.query("SELECT monitor_type, status FROM anomalies")) == {"service": "open", "team": "open"}

    # a week of steady billing data that showback has not allocated yet
    insert_focus(
        wh,
        [
            focus_row((spike + timedelta(days=k)).isoformat(), "800.00", tags={"team": "ml"})
            for k in range(1, 8)
        ],
    )
    later = run_anomalies(wh, settings, source="focus_costs")
    assert later.closed == costs.new  # the service spike is over; the team one is not its to close
    again = run_anomalies(wh, settings, source="showback")
    assert again.data_end == spike.isoformat() and again.closed == [] and again.new == []
    assert dict(wh.query("SELECT monitor_type, status FROM anomalies")) == {
        "service": "closed",
        "team": "open",
    }
