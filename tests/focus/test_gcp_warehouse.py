"""GCP detailed export end to end into DuckDB and PostgreSQL, idempotent."""

from __future__ import annotations

from decimal import Decimal

from finops.demo import gcp_generator as gen
from finops.focus.gcp_billing import CONVERTER
from tests.fixtures.focus_load import load_twice


def test_gcp_into_warehouse(any_wh, tmp_path):
    sample = gen.generate(days=1, currency="EUR")
    path = sample.write_parquet(tmp_path / "gcp.parquet")
    first, second, (total, n) = load_twice(any_wh, CONVERTER, [path], source="gcp-main", provider="gcp")
    assert first.status == second.status == "loaded", first.message
    assert n == len(sample.rows) + sample.promotion_credit_rows
    assert total.quantize(Decimal("0.01")) == sample.billed_total.quantize(Decimal("0.01"))
    row = any_wh.query(
        "SELECT raw_billed_total, focus_billed_total, currency FROM load_log WHERE source = 'gcp-main' "
        "ORDER BY finished_at DESC LIMIT 1"
    )[0]
    assert Decimal(row[0]) == Decimal(row[1]) == total and row[2] == "EUR"
