"""A dry run judges a delivery as a load would, including what only the warehouse can tell:
an empty delivery over a month already loaded (a load quarantines it; a dry run said 'valid').
The warehouse is only read: DuckDB opened read-only, PostgreSQL in a read-only session."""

from __future__ import annotations

import json

import pytest

from finops.focus.aws_cur_mapping import Cur2Converter
from finops.ingest import RawBatch, load_batch
from finops.orchestration.billing import dry_run_batch
from finops.paths import warehouse_path
from finops.warehouse.duckdb_wh import DuckDBWarehouse
from tests.fixtures.billing_batches import cur2_parquet

PERIOD = "2025-03"


def _log_rows(wh) -> int:
    return int(wh.query("SELECT count(*) FROM load_log")[0][0])


def test_dry_run_flags_an_empty_delivery_over_a_loaded_duckdb_month(tmp_path, finops_home, alerts):
    good = cur2_parquet(tmp_path / "good.parquet", [{}, {}])
    empty = cur2_parquet(tmp_path / "empty.parquet", [])
    empty_batch = RawBatch("dry", "aws", PERIOD, [empty], "fp-empty")

    assert dry_run_batch(empty_batch, Cur2Converter())["valid"] is True  # no warehouse yet: nothing to erase
    assert not warehouse_path().exists(), "a dry run never creates the warehouse"

    with DuckDBWarehouse(warehouse_path()) as wh:
        wh.migrate()
        assert (
            load_batch(wh, RawBatch("dry", "aws", PERIOD, [good], "fp-good"), Cur2Converter()).status
            == "loaded"
        )
        before = _log_rows(wh)

    out = dry_run_batch(empty_batch, Cur2Converter())
    assert out["valid"] is False and out["rows"] == 0
    assert any("holds no rows" in f and "already loaded" in f for f in out["failures"]), out
    other_month = dry_run_batch(RawBatch("dry", "aws", "2025-04", [empty], "fp-empty"), Cur2Converter())
    assert other_month["valid"] is True, other_month
    odd_unit = cur2_parquet(tmp_path / "unit.parquet", [{"pricing_unit": "10K"}])
    noted = dry_run_batch(RawBatch("dry-units", "aws", PERIOD, [odd_unit], "fp-unit"), Cur2Converter())
    assert noted["unknown_units"]["PricingUnit"] == {"10K": 1}, noted
    assert noted["valid"] is True, noted["failures"]
    assert noted["variant"].startswith("AWS CUR 2.0")  # what a load would record, said by the dry run

    with DuckDBWarehouse(warehouse_path(), read_only=True) as wh:
        assert _log_rows(wh) == before  # nothing written
    assert alerts == []


def test_dry_run_says_when_it_cannot_read_the_warehouse(tmp_path, finops_home, alerts):
    empty = cur2_parquet(tmp_path / "empty.parquet", [])
    with DuckDBWarehouse(warehouse_path()) as wh:  # held read-write by this process meanwhile
        wh.migrate()
        out = dry_run_batch(RawBatch("dry", "aws", PERIOD, [empty], "fp-empty"), Cur2Converter())
    assert out["valid"] is False
    assert any("could not be read" in f for f in out["failures"]), out


@pytest.mark.postgres
def test_dry_run_flags_an_empty_delivery_over_a_loaded_postgres_month(
    pg_wh, pg_conn_id, tmp_path, finops_home, alerts, monkeypatch
):
    cfg = tmp_path / "finops.yaml"
    cfg.write_text(json.dumps({"warehouse": {"conn_id": pg_conn_id.conn_id, "schema": pg_wh.schema}}))
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    good = cur2_parquet(tmp_path / "good.parquet", [{}])
    empty = RawBatch("dry", "aws", PERIOD, [cur2_parquet(tmp_path / "empty.parquet", [])], "fp-empty")

    assert dry_run_batch(empty, Cur2Converter())["valid"] is True
    assert (
        load_batch(pg_wh, RawBatch("dry", "aws", PERIOD, [good], "fp-good"), Cur2Converter()).status
        == "loaded"
    )
    before = _log_rows(pg_wh)

    out = dry_run_batch(empty, Cur2Converter())
    assert out["valid"] is False
    assert any("already loaded" in f for f in out["failures"]), out
    assert _log_rows(pg_wh) == before
