"""The embedded warehouse's direct load (convert straight into focus_costs, validate the new
rows inside the same transaction, commit or roll back) against the staging-parquet path
that PostgreSQL and dry runs use: same rows, same judgement, nothing lost on failure."""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime
from decimal import Decimal as D
from pathlib import Path

import pyarrow as pa
import pytest

from finops.demo.cur_generator import GenSpec, write_cur2_period
from finops.focus.schema import COLUMNS
from finops.ingest import RawBatch, _engine, load_batch
from finops.sources import aws_cur
from finops.warehouse.base import WarehouseError
from finops.warehouse.duckdb_wh import DuckDBWarehouse
from tests.fixtures.cur_rows import cur_row, write_cur

CUR2 = aws_cur.converter_for("cur2")


def _month(tmp_path: Path, period: str, rows: int, seed: int) -> tuple[RawBatch, object]:
    d = write_cur2_period(tmp_path / f"gen-{period}-{seed}", GenSpec(period, rows=rows, seed=seed))
    files = [tmp_path / f"gen-{period}-{seed}" / k for k in d.data_keys]
    return RawBatch("local", "aws", period, files, f"fp-{seed}"), d


def _rows(wh, period: str) -> pa.Table:
    cols = ", ".join(c.snake for c in COLUMNS if c.snake != "tags")
    t = wh.query_arrow(
        f"SELECT {cols}, CAST(tags AS VARCHAR) AS tags FROM focus_costs WHERE x_billing_period = ? ORDER BY ALL",
        [period],
    )
    return t


def _partition(wh, period: str) -> tuple[int, D]:
    n, billed = wh.query(
        "SELECT count(*), coalesce(sum(billed_cost), 0) FROM focus_costs WHERE x_source = 'local' AND x_billing_period = ?",
        [period],
    )[0]
    return int(n), D(billed)


def test_direct_and_staging_paths_load_identical_rows(duckdb_wh, tmp_path):
    batch, d = _month(tmp_path, "2025-02", 3000, 21)
    direct = load_batch(duckdb_wh, batch, CUR2)
    assert direct.status == "loaded", direct.message
    assert {"convert_insert_s", "validate_s", "total_s"} <= set(direct.timings)

    other = DuckDBWarehouse(tmp_path / "staging-path.duckdb")
    try:
        other.migrate()
        staged = load_batch(other, batch, CUR2, direct=False)
        assert staged.status == "loaded", staged.message
        assert {"convert_s", "validate_s", "load_s"} <= set(staged.timings)
        for field in (
            "row_count",
            "raw_billed_total",
            "focus_billed_total",
            "focus_effective_total",
            "currency",
        ):
            assert getattr(direct, field) == getattr(staged, field), field
        assert _rows(duckdb_wh, "2025-02").equals(_rows(other, "2025-02"))
    finally:
        other.close()
    assert direct.row_count == d.totals.focus_rows and direct.focus_billed_total == d.totals.billed_total
    logged = duckdb_wh.query(
        "SELECT status, row_count, focus_billed_total FROM load_log WHERE load_id = ?", [direct.load_id]
    )
    assert logged == [("loaded", d.totals.focus_rows, d.totals.billed_total)]


def test_failed_validation_rolls_back_and_keeps_the_loaded_month(duckdb_wh, tmp_path, finops_home):
    good = write_cur(
        tmp_path / "good.parquet",
        [cur_row(line_item_unblended_cost=2.0), cur_row(line_item_unblended_cost=3.0)],
    )
    assert load_batch(duckdb_wh, RawBatch("local", "aws", "2025-03", [good], "good"), CUR2).status == "loaded"
    before = _partition(duckdb_wh, "2025-03")
    late = write_cur(
        tmp_path / "late.parquet",
        [
            cur_row(line_item_unblended_cost=7.0),
            cur_row(
                line_item_unblended_cost=1.0,
                line_item_usage_start_date=datetime(2025, 5, 2),
                line_item_usage_end_date=datetime(2025, 5, 3),
            ),
        ],
    )
    entry = load_batch(duckdb_wh, RawBatch("local", "aws", "2025-03", [late], "late"), CUR2)
    assert entry.status == "quarantined"
    assert (
        "charge_period_end: charge period ends after its billing period: "
        "[('2025-04-01T00:00:00', '2025-05-03T00:00:00')] (1 row)"
    ) in (entry.message or "")
    assert _partition(duckdb_wh, "2025-03") == before == (2, D("5"))  # the DELETE was rolled back
    report = json.loads((Path(entry.quarantine_path or "") / "report.json").read_text())
    assert report["validation"]["success"] is False and report["validation"]["stats"]["row_count"] == 2
    assert (Path(entry.quarantine_path or "") / report["gx_result_file"]).exists()
    assert duckdb_wh.query("SELECT count(*) FROM duckdb_views() WHERE view_name LIKE 'finops_%'") == [(0,)]


def test_refused_insert_falls_back_to_staging_for_the_full_report(duckdb_wh, tmp_path, caplog):
    good = write_cur(tmp_path / "good.parquet", [cur_row(line_item_unblended_cost=4.0)])
    assert load_batch(duckdb_wh, RawBatch("local", "aws", "2025-03", [good], "good"), CUR2).status == "loaded"
    # BillingAccountId is NOT NULL in focus_costs: the direct INSERT fails on the constraint,
    # the staging path then names the column, the rule and the row count
    bad = write_cur(
        tmp_path / "nopayer.parquet",
        [
            cur_row(line_item_unblended_cost=1.0),
            cur_row(line_item_unblended_cost=2.0, bill_payer_account_id=None),
        ],
    )
    with caplog.at_level(logging.WARNING, logger="finops.ingest"):
        entry = load_batch(duckdb_wh, RawBatch("local", "aws", "2025-03", [bad], "nopayer"), CUR2)
    assert "direct load refused" in caplog.text
    assert entry.status == "quarantined"
    assert "billing_account_id: null values in a not-null column (1 row)" in (entry.message or "")
    assert _partition(duckdb_wh, "2025-03") == (1, D("4"))


def test_hostile_source_names_stay_literals(duckdb_wh, tmp_path):
    """The partition filter of the in-transaction view is the one place a name meets SQL text."""
    f = write_cur(tmp_path / "h.parquet", [cur_row(line_item_unblended_cost=1.5)])
    name = "x' OR '1'='1"
    entry = load_batch(duckdb_wh, RawBatch(name, "aws", "2025-03", [f], "h"), CUR2)
    assert entry.status == "loaded", entry.message
    assert duckdb_wh.query("SELECT DISTINCT x_source FROM focus_costs") == [(name,)]


def test_postgres_cannot_load_directly(pg_wh, tmp_path):
    f = write_cur(tmp_path / "p.parquet", [cur_row(line_item_unblended_cost=1.0)])
    with pytest.raises(ValueError, match="cannot load directly"):
        load_batch(pg_wh, RawBatch("local", "aws", "2025-03", [f], "p"), CUR2, direct=True)
    assert load_batch(pg_wh, RawBatch("local", "aws", "2025-03", [f], "p"), CUR2).status == "loaded"


def test_thread_cap_applies_to_the_warehouse_connection(tmp_path, monkeypatch):
    """FINOPS_DUCKDB_THREADS caps the staging engine; the direct load converts inside the
    warehouse connection, so the cap must hold there too."""
    monkeypatch.setenv("FINOPS_DUCKDB_THREADS", "1")
    wh = DuckDBWarehouse(tmp_path / "capped.duckdb")
    try:
        assert wh.query("SELECT current_setting('threads')") == [(1,)]
    finally:
        wh.close()


@pytest.mark.parametrize("bad", ["0", "-2", "four", "1.5"])
def test_a_bad_thread_cap_fails_naming_the_variable(tmp_path, monkeypatch, bad):
    """Both DuckDBs (the warehouse and the staging engine) read the cap the same strict way:
    a typo fails loudly instead of silently running uncapped on a shared worker."""
    monkeypatch.setenv("FINOPS_DUCKDB_THREADS", bad)
    with pytest.raises(WarehouseError, match="FINOPS_DUCKDB_THREADS must be a positive integer"):
        DuckDBWarehouse(tmp_path / "bad.duckdb")
    with pytest.raises(WarehouseError, match="FINOPS_DUCKDB_THREADS"):
        _engine(tmp_path / "spill")


def test_thread_cap_defaults(tmp_path, monkeypatch):
    monkeypatch.delenv("FINOPS_DUCKDB_THREADS", raising=False)
    con = _engine(tmp_path / "spill")
    assert con.execute("SELECT current_setting('threads')").fetchone() == (min(os.cpu_count() or 2, 8),)
    monkeypatch.setenv("FINOPS_DUCKDB_THREADS", " 1 ")
    assert _engine(tmp_path / "spill").execute("SELECT current_setting('threads')").fetchone() == (1,)


def test_a_mixed_currency_delivery_reconciles_and_logs_each_currency(duckdb_wh, tmp_path):
    """Two currencies in one delivery: each reconciles on its own, and load_log keeps both totals
    (the scalar totals add EUR to USD, so they alone say nothing about either)."""
    from tests.fixtures.cur_rows import cur_row, write_cur

    rows = [
        cur_row(line_item_unblended_cost=10.25, line_item_currency_code="USD"),
        cur_row(
            line_item_unblended_cost=7.5,
            line_item_currency_code="eur ",
            pricing_currency="EUR",
            line_item_resource_id="i-0eur",
        ),
        cur_row(line_item_unblended_cost=0.1, line_item_currency_code="USD", line_item_line_item_type="Tax"),
    ]
    path = write_cur(tmp_path / "mixed.parquet", rows)
    batch = RawBatch("local", "aws", "2025-03", [path], "fp-mixed")
    want = {
        "EUR": {"billed": "7.5000000000", "raw": "7.5000000000"},
        "USD": {"billed": "10.3500000000", "raw": "10.3500000000"},
    }
    for wh, direct in ((duckdb_wh, True), (DuckDBWarehouse(tmp_path / "staging.duckdb"), False)):
        wh.migrate()
        entry = load_batch(wh, batch, CUR2, direct=direct)
        assert entry.status == "loaded", entry.message
        assert entry.billed_by_currency == want and entry.currency == "EUR,USD"
        (logged,) = wh.query(
            "SELECT billed_by_currency FROM load_log WHERE load_id = ? AND status = 'loaded'", [entry.load_id]
        )[0]
        assert json.loads(logged) == want
