"""GCP spend-based CUD utilisation from a hand-written detailed export loaded through the real
spine: the `Commitment - dollar based v1` fee and the COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE
credits, with the discount from config. Every expected number is worked out below.

Google's own example: $50/h of on-demand Cloud SQL at 25 % off -> a $37.50/h fee, $900 a day;
the commitment is worth 50 x 24 = $1,200 a day on demand."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal as D

import pyarrow as pa
import pyarrow.parquet as pq

from finops.commitments.gcp import cud_utilisation, spend_cud_utilisation
from finops.commitments.query import gcp_cud_rows, month_window
from finops.commitments.settings import parse_settings
from finops.commitments.store import refresh_period, spend_discount
from finops.demo import gcp_generator as gen
from finops.focus.gcp_billing import CONVERTER
from finops.ingest import RawBatch, load_batch

SQL = {"id": "9662-B51E-5089", "description": "Cloud SQL"}
FEE_SKU = {"id": "CUD-SQL-1Y", "description": "Commitment - dollar based v1: Cloud SQL for 1 year"}
SETTINGS = parse_settings(
    {"providers": ["gcp"], "discounts": {"gcp": {"spend_cud": {"1y": {"no_upfront": 0.25}}}}}
)
ID = f"gcp-spend-cud:{gen.BILLING_ACCOUNT}:Cloud SQL:us-central1"


def _credit(kind: str, amount: float) -> dict:
    name = "Committed use discount - dollar based" if kind.endswith("DOLLAR_BASE") else "Discount"
    return {"name": name, "amount": amount, "full_name": name, "id": f"{kind}:1", "type": kind}


def _row(day: int, cost: float, credits: list[dict], region: str = "us-central1", sku: dict | None = None,
         hours: int = 1) -> dict:  # fmt: skip
    t0 = datetime(2026, 10, day, 3, tzinfo=UTC) if hours == 1 else datetime(2026, 10, day, tzinfo=UTC)
    return gen._row(
        service=SQL, sku=sku or {"id": "SQL-CORE", "description": "Cloud SQL for PostgreSQL: Zonal - vCPU"},
        usage_start_time=t0, usage_end_time=t0 + timedelta(hours=hours), project=gen._proj(0),
        location={"location": region, "country": "US", "region": region, "zone": None},
        export_time=t0 + timedelta(hours=hours + 6), cost=cost, cost_at_list=cost, credits=credits,
        usage={"amount": 3600.0 * hours, "unit": "seconds", "amount_in_pricing_units": float(hours), "pricing_unit": "hour"},
        invoice={"month": "202610", "publisher_type": "GOOGLE"},
    )  # fmt: skip


ROWS = [
    # 5 Oct: fee $900; credits offset 30 (a fully covered row) + 900 (a partly covered one,
    # which also has a $10 negotiated discount the CUD does not own): 930 credited
    _row(5, 900.0, [], sku=FEE_SKU, hours=24),
    _row(5, 30.0, [_credit("COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE", -30.0)]),
    _row(5, 1000.0, [_credit("COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE", -900.0), _credit("DISCOUNT", -10.0)]),
    _row(5, 50.0, []),  # on demand, not covered
    _row(
        5, 5.0, [_credit("COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE", -5.0)], region="europe-west4"
    ),  # no fee there
    # 6 Oct: fee $900; credits offset the whole commitment, 1,200
    _row(6, 900.0, [], sku=FEE_SKU, hours=24),
    _row(6, 1300.0, [_credit("COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE", -1200.0)]),
]


def _load(wh, tmp_path) -> None:
    path = tmp_path / "gcp-spend.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS, schema=gen.arrow_schema()), path)
    entry = load_batch(wh, RawBatch("gcp-main", "gcp", "2026-10", [path], "s1"), CONVERTER)
    assert entry.status == "loaded", entry.message


def test_spend_cud_utilisation_by_hand(duckdb_wh, tmp_path):
    _load(duckdb_wh, tmp_path)
    fees, covered = gcp_cud_rows(duckdb_wh, *month_window("2026-10"))
    assert cud_utilisation(fees, covered, "month") == []  # a dollar-based fee is no resource CUD
    (m,) = spend_cud_utilisation(fees, covered, spend_discount(SETTINGS), "month")
    assert (m.service, m.region, m.term_years, m.discount) == ("Cloud SQL", "us-central1", 1, D("0.25"))
    assert (m.fee, m.credited, m.covered_list) == (D(1800), D(2130), D(2330))  # list: 30 + 1000 + 1300
    assert m.commitment_on_demand == D(2400)  # 1800 / 0.75
    assert m.utilisation == D("0.8875")  # 2130 / 2400
    assert (m.used_cost, m.unused_cost) == (D("1597.5"), D("202.5"))  # 2130 x 0.75, capped at 900 a day

    day5, day6 = spend_cud_utilisation(fees, covered, spend_discount(SETTINGS), "day")
    assert (day5.period, day5.fee, day5.credited, day5.utilisation) == (
        "2026-10-05",
        D(900),
        D(930),
        D("0.775"),
    )
    assert (day5.used_cost, day5.unused_cost) == (D("697.5"), D("202.5"))  # 930 x 0.75
    assert (day6.credited, day6.utilisation, day6.used_cost, day6.unused_cost) == (
        D(1200),
        D(1),
        D(900),
        D(0),
    )


def test_spend_cud_rows_in_the_utilisation_table(duckdb_wh, tmp_path):
    _load(duckdb_wh, tmp_path)
    refresh_period(duckdb_wh, "2026-10", SETTINGS)
    got = duckdb_wh.query(
        "SELECT day, used_cost, unused_cost, used_quantity, unused_quantity, unit FROM commitment_utilisation "
        "WHERE commitment_id = ? ORDER BY day",
        [ID],
    )
    assert got == [
        (
            date(2026, 10, 5),
            D("697.5"),
            D("202.5"),
            D(930),
            D(270),
            "USD",
        ),  # 1200 - 930 on-demand dollars unused
        (date(2026, 10, 6), D(900), D(0), D(1200), D(0), "USD"),
    ]
