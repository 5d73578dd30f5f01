"""GCP's own FOCUS view -> our FOCUS table: credits become Credit rows, enums canonical, bounds fixed."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal

import pytest

from finops.demo import gcp_generator as gen
from finops.focus.gcp_billing import CONVERTER as DETAILED
from finops.focus.gcp_focus import CONVERTER
from tests.fixtures.focus_convert import convert


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gcp_focus")
    sample = gen.generate(period="2026-10", days=1)
    path = gen.write_focus_view_parquet(sample, tmp / "focus.parquet")  # Google's view shape: BilledCost net
    res, rows = convert(CONVERTER, [path], provider="gcp", period="2026-10", tmp=tmp)
    return sample, res, rows, tmp


def test_reconciles_with_the_invoice_and_with_the_detailed_export(converted):
    # regression: the view's BilledCost is already net of its x_Credits; adding them as rows on top
    # counted every credit twice (1093.30 instead of the invoice's 1247.44), and the raw total did
    # the same, so the reconciliation could not see it
    sample, res, rows, tmp = converted
    assert res.focus_billed_total == res.raw_billed_total
    assert res.raw_billed_total.quantize(Decimal("0.01")) == sample.billed_total.quantize(Decimal("0.01"))
    det, det_rows = convert(
        DETAILED, [sample.write_parquet(tmp / "raw.parquet")], provider="gcp", period="2026-10", tmp=tmp
    )
    assert det.focus_billed_total == res.focus_billed_total
    assert det.focus_effective_total == res.focus_effective_total

    def by_category(rs):
        out: dict[str, Decimal] = {}
        for r in rs:
            out[r["charge_category"]] = out.get(r["charge_category"], Decimal(0)) + r["billed_cost"]
        return out

    assert by_category(rows) == by_category(det_rows)  # promotional credit split out the same way


def test_credit_rows_and_canonical_enums(converted):
    sample, _, rows, _ = converted
    promos = [c for r in sample.rows for c in r["credits"] if c["type"] == "PROMOTION"]
    assert promos and len(promos) < sum(len(r["credits"]) for r in sample.rows)
    assert sum(r["charge_category"] == "Credit" for r in rows) == len(promos)  # discounts stay netted
    assert {r["charge_category"] for r in rows} == {"Usage", "Tax", "Adjustment", "Credit"}
    assert {r["pricing_category"] for r in rows} == {"Standard", "Committed", None}
    adj = [r for r in rows if r["charge_class"] is not None]
    assert [r["charge_class"] for r in adj] == ["Correction"]
    # the view's inclusive-last-day bounds are replaced by the period's Pacific midnights (PDT), end exclusive
    assert {(r["billing_period_start"], r["billing_period_end"]) for r in rows} == {
        (datetime(2026, 10, 1, 7), datetime(2026, 11, 1, 7))
    }
    # "GCP > Compute" is not a FOCUS category: falls back to our service map
    assert {r["service_category"] for r in rows if r["service_name"] == "Compute Engine"} == {"Compute"}
    assert {r["invoice_issuer_name"] for r in rows} == {"Google Cloud"}
    assert {r["charge_frequency"] for r in rows if r["charge_category"] == "Usage"} == {"Usage-Based"}


def test_tags_priority(converted):
    sample, _, rows, _ = converted
    src = next(r for r in sample.rows if any(x["key"] == "team" for x in r["labels"]))
    out = next(
        r
        for r in rows
        if r["charge_period_start"] == src["usage_start_time"].replace(tzinfo=None)
        and r["sku_id"] == src["sku"]["id"]
        and r["charge_category"] == "Usage"
    )
    assert json.loads(out["tags"])["team"] == "research"  # resource label beats project label


def test_view_service_category_as_the_pricing_taxonomy_array(converted):
    """The view takes ServiceCategory from the pricing export's product_taxonomy, an
    ARRAY<STRING>: it is not a FOCUS category, so ours is used, and the load counts it as derived."""
    import duckdb

    sample, _, _, tmp = converted
    src = gen.write_focus_view_parquet(sample, tmp / "view.parquet")
    arr = tmp / "view_taxonomy.parquet"
    duckdb.sql(
        f"COPY (SELECT * REPLACE (CASE WHEN ServiceName = 'Compute Engine' THEN ['GCP', 'Compute', 'VMs On Demand'] "
        f"END AS ServiceCategory) FROM read_parquet('{src}')) TO '{arr}' (FORMAT parquet)"
    )
    res, rows = convert(CONVERTER, [arr], provider="gcp", period="2026-10", tmp=tmp)
    assert res.focus_billed_total == res.raw_billed_total
    assert {r["service_category"] for r in rows if r["service_name"] == "Compute Engine"} == {"Compute"}
    con = duckdb.connect()
    con.execute(f"CREATE VIEW raw AS {CONVERTER.reader_sql([str(arr)])}")
    counts = dict(con.execute(CONVERTER.derived_counts_sql("raw")).fetchall())
    assert counts["ServiceCategory"] == len(sample.rows)  # none of the view's values is a FOCUS category
