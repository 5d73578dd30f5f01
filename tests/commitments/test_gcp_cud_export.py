"""End dates of GCP spend-based CUDs from Google's CUD metadata export (`cud_subscriptions_export`,
schema as Google documents it: cud_product, consumption_model, subscription, region,
commitent_amount {unit, value}, term, start_time, end_time, state) in the BigQuery emulator,
read through the GCP billing source's BigQuery connection, into commitment_inventory under the
billing side's id, `gcp-spend-cud:<subscription.instance_id>`, so the calendar and alerts see them.

Snapshots (one per day, no snapshot column):
- SUB_A, Compute Flexible CUD 1 year, $10/h: the same row on 2 days; end 2027-07-15T00:00Z is
  exclusive, so the last day is 2027-07-14. On 2027-06-20 that is 24 days left: the 30-day window.
- SUB_B, Cloud SQL CUD 3 years: end 2029-02-18 12:11:20 UTC -> last day 2029-02-18.
- SUB_C, expired: an `Active` then an `Expired` snapshot with the same end 2026-09-30T07:00Z ->
  one item, last day 2026-09-30.
Billing side, 2027-06-18 (FOCUS rows as finops.focus.gcp_billing maps the multiprice model):
SUB_A's $240 fee, 60 of it not offset, and usage of 200 + 50 at list price billed 144 + 36:
used 180, unused 60, daily cost 240, the bill after the end 250 a day (10 more), utilisation 0.75."""

from __future__ import annotations

import json
import uuid
from datetime import date, datetime
from decimal import Decimal as D

import pytest

from finops.commitments import inventory as inv
from finops.commitments.settings import CommitmentsConfigError, parse_settings
from finops.commitments.sources import fetch_end_dates
from finops.commitments.store import calendar, expiry_events, refresh_period

SUB_A = "769c55ea-c50f-4258-bcf5-04b6688fa5fa"
SUB_B = "0b1e6d0e-6a1f-4b7e-9d4c-3f2a8c1d5e70"
SUB_C = "5d2f0c44-9a7b-4c1e-8f3d-2b6a9e0c7d11"
ACCOUNT = "010101-F0FFF0-10XX01"


def _field(name, typ="STRING", fields=()):
    from google.cloud import bigquery

    return bigquery.SchemaField(name, typ, fields=list(fields))


SCHEMA = [
    _field("billing_account_id"),
    _field("cud_product", "RECORD", [_field("id"), _field("display_name"), _field("type")]),
    _field("consumption_model", "RECORD", [_field("id"), _field("description")]),
    _field(
        "subscription", "RECORD", [_field("entitlement_scope"), _field("instance_id"), _field("display_name")]
    ),
    _field("region"),
    _field("commitent_amount", "RECORD", [_field("unit"), _field("value", "NUMERIC")]),
    _field("term"),
    _field("start_time", "TIMESTAMP"),
    _field("end_time", "TIMESTAMP"),
    _field("state"),
]


def _snapshot(sub, model_id, model, value, term, start, end, state, name="", region="us-central1"):
    return {
        "billing_account_id": ACCOUNT,
        "cud_product": {"id": "344fffc1-17f9-4e34-abf2-cfffff409fa2", "display_name": "Flexible CUD",
                        "type": "Spend-Based"},
        "consumption_model": {"id": model_id, "description": model},
        "subscription": {"entitlement_scope": f"billingAccounts/{ACCOUNT}", "instance_id": sub,
                         "display_name": name},
        "region": region,
        "commitent_amount": {"unit": "$/hr", "value": value},
        "term": term,
        "start_time": start,
        "end_time": end,
        "state": state,
    }  # fmt: skip


SNAPSHOTS = [
    _snapshot(SUB_A, "D97B-0795-975B", "Compute Flexible CUD - 1 Year", "10", "P1Y",
              "2026-07-15T00:00:00Z", "2027-07-15T00:00:00Z", "Active", "ml training"),
    _snapshot(SUB_A, "D97B-0795-975B", "Compute Flexible CUD - 1 Year", "10", "P1Y",
              "2026-07-15T00:00:00Z", "2027-07-15T00:00:00Z", "Active", "ml training"),
    _snapshot(SUB_B, "9E06-4EF0-37D8", "Cloud SQL CUD - 3 Years", "0.05", "P3Y",
              "2026-02-18T12:11:20Z", "2029-02-18T12:11:20Z", "Active", region="europe-west4"),
    _snapshot(SUB_C, "D97B-0795-975B", "Compute Flexible CUD - 1 Year", "2.5", "P1Y",
              "2025-09-30T07:00:00Z", "2026-09-30T07:00:00Z", "Active"),
    _snapshot(SUB_C, "D97B-0795-975B", "Compute Flexible CUD - 1 Year", "2.5", "P1Y",
              "2025-09-30T07:00:00Z", "2026-09-30T07:00:00Z", "Expired"),
]  # fmt: skip


@pytest.fixture
def cud_export(gcp_bq_client, gcp_conn):
    """`billing-proj.cud.cud_subscriptions_export_<n>` holding SNAPSHOTS; returns its name."""
    from google.cloud import bigquery

    gcp_bq_client.create_dataset("cud", exists_ok=True)
    name = f"billing-proj.cud.cud_subscriptions_export_{uuid.uuid4().hex[:8]}"
    table = gcp_bq_client.create_table(bigquery.Table(name, schema=SCHEMA))
    assert gcp_bq_client.insert_rows_json(table, SNAPSHOTS) == []
    return name


def _settings(conn, *tables, **extra):
    return parse_settings({
        "providers": ["gcp"],
        "end_date_sources": [{"provider": "gcp", "conn_id": conn, "cud_export_table": t} for t in tables],
        **extra,
    })  # fmt: skip


def test_end_dates_from_the_cud_export(cud_export, gcp_conn, duckdb_wh):
    res = fetch_end_dates(duckdb_wh, _settings(gcp_conn, cud_export))
    assert res.failed == {}
    assert res.stored == {f"gcp:{gcp_conn}:{cud_export}": 3}
    got = {i.commitment_id: (i.end, i.start, i.commitment_type, i.description, i.term, i.source)
           for i in inv.load(duckdb_wh) if i.provider == "gcp"}  # fmt: skip
    assert got == {
        f"gcp-spend-cud:{SUB_A}": (date(2027, 7, 14), date(2026, 7, 15), "Committed Use Discount",
                                   "Compute Flexible CUD - 1 Year 10 $/hr us-central1 (ml training)", "P1Y",
                                   "gcp-cud-export"),
        f"gcp-spend-cud:{SUB_B}": (date(2029, 2, 18), date(2026, 2, 18), "Committed Use Discount",
                                   "Cloud SQL CUD - 3 Years 0.05 $/hr europe-west4", "P3Y", "gcp-cud-export"),
        f"gcp-spend-cud:{SUB_C}": (date(2026, 9, 30), date(2025, 9, 30), "Committed Use Discount",
                                   "Compute Flexible CUD - 1 Year 2.5 $/hr us-central1", "P1Y", "gcp-cud-export"),
    }  # fmt: skip


def _focus_rows(wh):
    """SUB_A on 2027-06-18 as finops.focus.gcp_billing maps the multiprice model."""
    day = datetime(2027, 6, 18)
    table = [  # sku, status, contracted, effective, list
        ("5515-81A8-03A2", "Unused", "240", "60", "240"),
        ("2D4E-N2-CORE", "Used", "200", "144", "200"),
        ("5C8F-N2-RAM", "Used", "50", "36", "50"),
    ]
    rows = [
        {
            "billed_cost": D(eff), "billing_account_id": ACCOUNT, "billing_currency": "USD",
            "billing_period_start": datetime(2027, 6, 1), "billing_period_end": datetime(2027, 7, 1),
            "charge_category": "Usage", "charge_period_start": day, "charge_period_end": datetime(2027, 6, 19),
            "contracted_cost": D(con), "effective_cost": D(eff), "invoice_issuer_name": "Google Cloud",
            "list_cost": D(lst), "provider_name": "Google Cloud", "publisher_name": "Google Cloud",
            "service_category": "Compute", "service_name": "Compute Engine", "sub_account_id": "ml-prod",
            "pricing_category": "Committed", "commitment_discount_status": status, "commitment_discount_id": SUB_A,
            "commitment_discount_category": "Spend", "commitment_discount_type": "Committed Use Discount",
            "sku_id": sku, "tags": json.dumps({}), "x_instance_type": None if status == "Unused" else "n2-standard-8",
            "x_source": "hand", "x_billing_period": "2027-06", "x_provider": "gcp", "x_load_id": "hand",
        }
        for sku, status, con, eff, lst in table
    ]  # fmt: skip
    cols = list(rows[0])
    sql = f"INSERT INTO focus_costs ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"
    for r in rows:
        wh.execute(sql, [r[c] for c in cols])


def test_the_calendar_and_alerts_cover_them(cud_export, gcp_conn, duckdb_wh):
    settings = _settings(gcp_conn, cud_export)
    fetch_end_dates(duckdb_wh, settings)
    _focus_rows(duckdb_wh)
    refresh_period(duckdb_wh, "2027-06", settings)
    today = date(2027, 6, 20)
    entries = {e.commitment.commitment_id: e for e in calendar(duckdb_wh, settings, today)}
    a = entries[f"gcp-spend-cud:{SUB_A}"]
    assert (a.days_left, a.alert, a.days_observed) == (24, 30, 1)
    assert (a.daily_commitment_cost, a.daily_on_demand_cost, a.daily_increase) == (D(240), D(250), D(10))
    assert a.daily_utilisation == D("0.75")
    b, c = entries[f"gcp-spend-cud:{SUB_B}"], entries[f"gcp-spend-cud:{SUB_C}"]
    assert (b.days_left, b.alert, b.days_observed) == ((date(2029, 2, 18) - today).days, None, 0)
    assert (c.days_left, c.alert) == ((date(2026, 9, 30) - today).days, None)
    events = expiry_events(entries.values(), settings, today)
    expiry = [e for e in events if e.kind == "commitment_expiry"]
    assert [(e.facts["commitment"], e.facts["ends"], e.facts["days_left"], e.severity) for e in expiry] == [
        (f"gcp-spend-cud:{SUB_A}", "2027-07-14", 24, "warning")
    ]
    assert expiry[0].facts["daily_increase"] == "10.00"
    # 7 days before the end: the 7-day window
    (a7,) = [
        e
        for e in calendar(duckdb_wh, settings, date(2027, 7, 7))
        if e.commitment.commitment_id.endswith(SUB_A)
    ]
    assert (a7.days_left, a7.alert) == (7, 7)


def test_a_table_that_is_not_the_cud_export_fails_alone(cud_export, gcp_bq_client, gcp_conn, duckdb_wh):
    from google.cloud import bigquery

    other = f"billing-proj.cud.not_cud_{uuid.uuid4().hex[:8]}"
    gcp_bq_client.create_table(bigquery.Table(other, schema=[_field("billing_account_id")]))
    res = fetch_end_dates(duckdb_wh, _settings(gcp_conn, other, cud_export))
    assert res.stored == {f"gcp:{gcp_conn}:{cud_export}": 3}
    assert "no column subscription.instance_id" in res.failed[f"gcp:{gcp_conn}:{other}"]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"provider": "gcp", "conn_id": "x", "cud_export_tabel": "billing-proj.cud.cud_subscriptions_export"},
         "commitments.end_date_sources.0.cud_export_tabel: Extra inputs are not permitted"),
        ({"provider": "gcp", "conn_id": "x", "cud_export_table": "billing-proj.cud.t`; DROP TABLE t; --"},
         "commitments.end_date_sources.0.cud_export_table: String should match pattern"),
        ({"provider": "azure", "conn_id": "x", "cud_export_table": "billing-proj.cud.cud_subscriptions_export"},
         "cud_export_table: only for provider gcp"),
        ({"provider": "gcp", "base_url": "http://127.0.0.1:9", "cud_export_table": "billing-proj.cud.cud_subscriptions_export"},
         "cud_export_table: read through conn_id's BigQuery connection"),
    ],
)  # fmt: skip
def test_bad_cud_export_source_fails_naming_the_key(source, message):
    with pytest.raises(CommitmentsConfigError) as e:
        parse_settings({"end_date_sources": [source]})
    assert message in str(e.value)
