"""The commitments tables, per-team coverage, the expiry calendar and its alerts on real
warehouses (DuckDB and PostgreSQL) and a local Slack webhook: hand-written FOCUS rows whose
every expected number is worked out in the comments; each alert goes out once."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal as D

import pytest

from finops.alerts.dedup import AlertLedger
from finops.alerts.events import emit
from finops.alerts.routing import register_configured_sinks
from finops.commitments import inventory as inv
from finops.commitments.query import commitment_lines, month_window
from finops.commitments.settings import parse_settings
from finops.commitments.store import (
    WhatIf,
    calendar,
    expiry_events,
    purchase_advice,
    refresh_period,
    store_advice,
)
from finops.commitments.usage import coverage
from finops.config import AlertRoute, AlertsConfig
from tests.fixtures.commitments import RI, RULES, SP, load_commitment_rows

TODAY = date(2026, 10, 20)


def test_coverage_per_team_uses_the_showback_rules(any_wh):
    load_commitment_rows(any_wh)
    lines = commitment_lines(any_wh, *month_window("2026-10"), rules=RULES)
    got = {
        (c.account, c.team, c.family): (c.covered_list, c.eligible_list, c.unused_cost)
        for c in coverage(lines, "month", by_team=True)
    }
    assert got == {
        ("111", "ml", "g5"): (D(10), D(4), D(0)),  # tag team=ml: coverage 10 / 14
        ("111", "data", "g5"): (D(5), D(0), D(0)),  # tag team=data
        ("111", "ml", None): (D(0), D(0), D(1)),  # untagged unused SP: account rule -> ml
        ("222", "platform", "p4d"): (D(32), D(0), D(0)),  # account rule -> platform
        ("222", "platform", None): (D(0), D(0), D(12)),
    }
    # without rules the lines carry no team and the totals are the same
    plain = coverage(
        commitment_lines(any_wh, *month_window("2026-10")), "month", by_account=False, by_family=False
    )
    assert [(c.team, c.covered_list, c.eligible_list, c.unused_cost) for c in plain] == [
        (None, D(47), D(4), D(13))
    ]


def test_tables_calendar_and_alerts_once(any_wh, alert_slack, alert_sinks):
    wh = any_wh
    load_commitment_rows(wh)
    settings = parse_settings({
        "utilisation_floor": 0.8,
        "inventory": [{"provider": "aws", "id": SP, "end": "2026-10-27", "description": "Compute SP"}],
    })  # fmt: skip
    inv.store(wh, [inv.InventoryItem("aws", RI, date(2026, 11, 15), date(2025, 11, 16), "Reserved Instance",
                                     "p4d.24xlarge us-east-1", "1yr", "No Upfront", "cur2")])  # fmt: skip
    res = refresh_period(wh, "2026-10", settings, RULES)
    assert (res.commitments, res.utilisation_rows, res.inventory_declared) == (2, 2, 1)
    util = {c: D(u) / (D(u) + D(n)) for c, u, n in wh.query(
        "SELECT commitment_id, used_cost, unused_cost FROM commitment_utilisation")}  # fmt: skip
    assert util == {SP: D("0.9"), RI: D("0.625")}  # 9 / 10 and 20 / 32
    team_cov = wh.query(
        "SELECT team, SUM(covered_list), SUM(eligible_list) FROM commitment_coverage GROUP BY team ORDER BY team"
    )
    assert [(t, D(c), D(e)) for t, c, e in team_cov] == [("data", 5, 0), ("ml", 10, 4), ("platform", 32, 0)]
    assert refresh_period(wh, "2026-10", settings, RULES).utilisation_rows == 2  # rewritten, not doubled
    assert wh.query("SELECT COUNT(*) FROM commitment_utilisation")[0][0] == 2

    entries = {e.commitment.commitment_id: e for e in calendar(wh, settings, TODAY)}
    sp, ri = entries[SP], entries[RI]
    # SP: ends in 7 days; it costs 10 a day (9 used + 1 unused) and covers 15 of list price:
    # the day after it ends, the same usage costs 15, 5 more
    assert (sp.days_left, sp.alert, sp.daily_commitment_cost, sp.daily_on_demand_cost) == (7, 7, D(10), D(15))
    assert sp.daily_increase == D(5) and sp.daily_utilisation == D("0.9")
    assert (ri.days_left, ri.alert, ri.daily_utilisation) == (26, 30, D("0.625"))

    events = expiry_events(entries.values(), settings, TODAY)
    assert sorted(e.dedup_key for e in events) == [
        f"commitment_expiry:aws:{RI}:2026-11-15:30d",
        f"commitment_expiry:aws:{SP}:2026-10-27:7d",
        f"commitment_low_util:aws:{RI}:2026-10",  # 62.5 % < 80 %
    ]
    alert_slack.server.expect_request(alert_slack.path, method="POST").respond_with_data("ok")
    register_configured_sinks(
        AlertsConfig(routes=[AlertRoute(slack_conn_id=alert_slack.conn_id)]), AlertLedger(wh)
    )
    for e in events:
        assert emit(e) == []
    assert len(alert_slack.payloads()) == 3
    assert "5.00 more a day" in json.dumps(alert_slack.payloads())
    for e in expiry_events(calendar(wh, settings, TODAY), settings, TODAY):  # the next run: nothing new
        assert emit(e) == []
    assert len(alert_slack.payloads()) == 3


def test_what_if_advice_stored(any_wh):
    load_commitment_rows(any_wh)
    settings = parse_settings({"advice": {"lookback_days": 7}})
    # the only uncovered usage: 4 of on-demand g5 on Monday 19 October = 1/6 $/h that day, 0 the
    # other six days; each weekday weighs 1/7, so on demand costs 1/42 $/h on average.
    # 0.10 $/h of a 1y no-upfront SP (20 % off) covers 0.125 $/h: cost 0.10 + 1/7 x (1/6 - 1/8)
    # = 0.10 + 1/168; savings 1/42 - 0.10 - 1/168 = -0.0821.. $/h, x 8760 = -719.57 a year
    res = purchase_advice(any_wh, settings, TODAY, WhatIf("aws", "savings_plan", D("0.10")))
    assert len(res.advice) == 6 and all(a.commitment_hourly == D("0.10") for a in res.advice)
    assert store_advice(any_wh, "run-1", res.advice, what_if=True) == 6
    got = any_wh.query(
        "SELECT expected_savings_term, covers_on_demand_hourly, samples FROM commitment_advice "
        "WHERE what_if AND term_years = 1 AND payment = 'no_upfront'"
    )
    assert [(D(s).quantize(D("0.01")), D(k), n) for s, k, n in got] == [(D("-719.57"), D("0.125"), 7)]
    assert purchase_advice(any_wh, settings, TODAY).advice == []  # buying nothing is best here


def test_end_dates_from_the_raw_cur(tmp_path, duckdb_wh):
    from datetime import datetime

    from finops.demo.cur_generator import RI_ARN, SP_ARN, GenSpec, write_cur2_period

    # the generator writes CUR 2.0's end-time columns as text (RIFee / SavingsPlanRecurringFee);
    # the SP ends 35 days after the RI, both 1-year terms
    spec = GenSpec("2026-03", rows=50, seed=3, ri_end=datetime(2027, 3, 20, 7, 59, 59))
    d = write_cur2_period(tmp_path / "gen", spec)
    files = [tmp_path / "gen" / k for k in d.data_keys]
    items = {i.commitment_id: i for i in inv.aws_items_from_files(files)}
    assert set(items) == {SP_ARN, RI_ARN}
    assert (items[RI_ARN].end, items[RI_ARN].start) == (date(2027, 3, 20), date(2026, 3, 20))
    assert (items[SP_ARN].end, items[SP_ARN].start) == (date(2027, 4, 24), date(2026, 4, 24))
    # by default the RI ends (00:00, exclusive) 31 days after the period: its last day is the 30th
    d2 = write_cur2_period(tmp_path / "gen2", GenSpec("2026-03", rows=50, seed=3))
    by_default = {
        i.commitment_id: i for i in inv.aws_items_from_files([tmp_path / "gen2" / k for k in d2.data_keys])
    }
    assert (by_default[RI_ARN].end, by_default[RI_ARN].start) == (date(2026, 5, 1), date(2025, 5, 2))
    assert by_default[SP_ARN].end == date(2026, 6, 5)
    seen: list = []  # the billing DAG's after_load hook: the UI rollups first, then the end dates
    inv.then_record_end_dates(seen.append, duckdb_wh, "aws", files, None)
    assert seen == [None]
    assert {i.commitment_id: i.end for i in inv.load(duckdb_wh)} == {
        SP_ARN: date(2027, 4, 24),
        RI_ARN: date(2027, 3, 20),
    }
    assert inv.record_from_cur_files(duckdb_wh, "gcp", files) is None


def test_end_dates_from_the_azure_and_gcp_apis():
    orders = {"value": [{
        "id": "/providers/Microsoft.Capacity/reservationOrders/o-1",
        "properties": {"displayName": "NC A100 v4 eastus", "term": "P1Y", "billingPlan": "Monthly",
                       "benefitStartTime": "2025-12-01T00:00:00Z", "expiryDateTime": "2026-12-01T00:00:00Z",
                       "reservations": [{"id": "/providers/Microsoft.Capacity/reservationOrders/o-1/reservations/R-1"}]},
    }]}  # fmt: skip
    (az,) = inv.azure_reservation_orders(orders)
    assert az.commitment_id == "/providers/microsoft.capacity/reservationorders/o-1/reservations/r-1"
    assert (az.end, az.start, az.term, az.payment_option) == (
        date(2026, 11, 30),
        date(2025, 12, 1),
        "P1Y",
        "Monthly",
    )
    gcp = {"items": [{"name": "cud-a100-1y", "selfLink": "https://compute/projects/p/regions/us-central1/commitments/cud-a100-1y",
                      "plan": "TWELVE_MONTH", "region": "https://compute/projects/p/regions/us-central1",
                      "startTimestamp": "2026-01-01T00:00:00.000-08:00", "endTimestamp": "2027-01-01T00:00:00.000-08:00",
                      "resources": [{"type": "ACCELERATOR", "amount": "3"}]}]}  # fmt: skip
    (g,) = inv.gcp_commitments(gcp)
    assert (g.end, g.term, g.description) == (date(2027, 1, 1), "TWELVE_MONTH", "3 ACCELERATOR us-central1")


@pytest.mark.parametrize(
    "today", [date(2026, 11, 1), date(2026, 11, 30), date(2026, 12, 31), date(2027, 2, 28)]
)
def test_demo_ri_is_inside_the_30_day_window_whatever_the_day(tmp_path, today):
    # the demo writes the closed months before today's with ri_end = last month's end + 31 days:
    # 31 - day-of-month days left, so a run on any day of the month sees the RI ending soon
    from datetime import timedelta

    from finops.commitments.expiry import Commitment, expiry_calendar
    from finops.demo.cur_generator import RI_ARN, GenSpec, write_cur2_period
    from finops.demo.run import demo_periods

    last = GenSpec(demo_periods(3, today)[-1], rows=50, seed=1)
    last.ri_end = last.end + timedelta(days=31)
    d = write_cur2_period(tmp_path, last)
    ri = next(
        i for i in inv.aws_items_from_files([tmp_path / k for k in d.data_keys]) if i.commitment_id == RI_ARN
    )
    (e,) = expiry_calendar([Commitment("aws", ri.commitment_id, ri.end)], [], today)
    assert 0 <= e.days_left <= 30  # an expiry alert is due (the 7-day one from 7 days before the end)
    assert e.alert == (30 if e.days_left > 7 else 7)
