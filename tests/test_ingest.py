"""The billing spine end to end: generator -> moto S3 -> sources.aws_cur -> ingest.load_batch
-> warehouse (DuckDB; PostgreSQL below), with idempotency, restatement and bad input."""

from __future__ import annotations

import json
import time
from datetime import datetime
from decimal import Decimal as D
from pathlib import Path

import pytest

from finops.demo.cur_generator import GenSpec, expected_totals
from finops.ingest import RawBatch, load_batch, make_load_id
from finops.sources import aws_cur
from tests.fixtures.cur_rows import cur_row, write_cur

CENT = D("0.01")


def _load(wh, awsb_bucket, src, period, **kw):
    batch = aws_cur.fetch_batch(src, period, client=awsb_bucket.client)
    assert batch is not None
    return load_batch(wh, batch, aws_cur.converter_for(src.format), run_id="test-run", **kw)


def _partition(wh, period, source="main-payer"):
    rows = wh.query(
        "SELECT count(*), sum(billed_cost), sum(effective_cost) FROM focus_costs WHERE x_source = ? AND x_billing_period = ?",
        [source, period],
    )
    n, billed, eff = rows[0]
    return int(n), D(billed or 0), D(eff or 0)


def test_e2e_two_periods_reconcile_to_the_cent(duckdb_wh, awsb_bucket, awsb_source, awsb_deliver):
    src = awsb_source()
    delivered = {p: awsb_deliver(GenSpec(p, rows=3000, seed=7)) for p in ("2025-01", "2025-02")}
    for period, d in delivered.items():
        entry = _load(duckdb_wh, awsb_bucket, src, period)
        assert entry.status == "loaded", entry.message
        assert entry.row_count == d.totals.focus_rows
        assert entry.raw_billed_total == entry.focus_billed_total == d.totals.billed_total  # exact
        n, billed, eff = _partition(duckdb_wh, period)
        assert n == d.totals.focus_rows
        assert billed.quantize(CENT) == d.totals.billed_total.quantize(CENT)
        assert billed == d.totals.billed_total and eff == d.totals.effective_total  # exact, amortised too
        assert expected_totals(GenSpec(period, rows=3000, seed=7)).billed == d.totals.billed
    log = duckdb_wh.query(
        "SELECT status, manifest_key, assembly_id, file_count, run_id FROM load_log ORDER BY billing_period"
    )
    assert [r[0] for r in log] == ["loaded", "loaded"]
    assert log[0][1].endswith("metadata/BILLING_PERIOD=2025-01/finops-export-Manifest.json")
    assert log[0][2] == delivered["2025-01"].execution_id and log[0][3] == 1 and log[0][4] == "test-run"
    by_type = dict(
        duckdb_wh.query(
            "SELECT x_charge_type, sum(billed_cost) FROM focus_costs WHERE x_billing_period = '2025-01' GROUP BY 1"
        )
    )
    assert {k: D(v) for k, v in by_type.items()} == {
        k: D(v) * D("0.00000001") for k, v in delivered["2025-01"].totals.by_type.items()
    }


def test_idempotent_rerun(duckdb_wh, awsb_bucket, awsb_source, awsb_deliver):
    src = awsb_source()
    awsb_deliver(GenSpec("2025-03", rows=1500, seed=3))
    first = _load(duckdb_wh, awsb_bucket, src, "2025-03")
    snap1 = duckdb_wh.query(
        "SELECT * FROM focus_costs ORDER BY charge_period_start, billed_cost, sku_meter, resource_id, x_charge_type"
    )
    again = _load(duckdb_wh, awsb_bucket, src, "2025-03")
    assert again.status == "unchanged" and again.load_id == first.load_id
    forced = _load(duckdb_wh, awsb_bucket, src, "2025-03", force=True)
    assert forced.status == "loaded" and forced.load_id == first.load_id
    snap2 = duckdb_wh.query(
        "SELECT * FROM focus_costs ORDER BY charge_period_start, billed_cost, sku_meter, resource_id, x_charge_type"
    )
    assert snap1 == snap2  # identical rows (deterministic load id), not doubled
    assert [r[0] for r in duckdb_wh.query("SELECT status FROM load_log ORDER BY finished_at")] == [
        "loaded",
        "unchanged",
        "loaded",
    ]


def test_restatement_replaces_without_double_counting(duckdb_wh, awsb_bucket, awsb_source, awsb_deliver):
    src = awsb_source()
    old = awsb_deliver(GenSpec("2025-04", rows=1200, seed=4))
    other = awsb_deliver(GenSpec("2025-05", rows=800, seed=4))
    assert _load(duckdb_wh, awsb_bucket, src, "2025-04").status == "loaded"
    assert _load(duckdb_wh, awsb_bucket, src, "2025-05").status == "loaded"
    time.sleep(1.1)
    new = awsb_deliver(GenSpec("2025-04", rows=1400, seed=4, restatement=2))
    assert new.totals.billed != old.totals.billed
    entry = _load(duckdb_wh, awsb_bucket, src, "2025-04")
    assert entry.status == "loaded" and entry.assembly_id == new.execution_id
    assert _partition(duckdb_wh, "2025-04") == (
        new.totals.focus_rows,
        new.totals.billed_total,
        new.totals.effective_total,
    )
    assert _partition(duckdb_wh, "2025-05")[1] == other.totals.billed_total  # other partition untouched
    ids = {
        r[0]
        for r in duckdb_wh.query(
            "SELECT DISTINCT x_load_id FROM focus_costs WHERE x_billing_period = '2025-04'"
        )
    }
    assert ids == {entry.load_id}


def test_bad_delivery_is_quarantined_and_loaded_data_kept(
    duckdb_wh, awsb_bucket, awsb_source, awsb_deliver, alerts, finops_home
):
    src = awsb_source()
    good = awsb_deliver(GenSpec("2025-06", rows=1000, seed=6))
    assert _load(duckdb_wh, awsb_bucket, src, "2025-06").status == "loaded"
    time.sleep(1.1)
    bad = awsb_deliver(GenSpec("2025-06", rows=1000, seed=6, restatement=1))
    local = awsb_bucket.workdir / "d2" / bad.data_keys[0]
    data = local.read_bytes()
    awsb_bucket.put(f"exports/finops-export/{bad.data_keys[0]}", data[: len(data) // 2])  # truncated parquet
    entry = _load(duckdb_wh, awsb_bucket, src, "2025-06")
    assert entry.status == "quarantined"
    assert "cannot read raw files" in (entry.message or "")
    qdir = Path(entry.quarantine_path or "")
    assert qdir.is_relative_to(finops_home / "quarantine" / "main-payer" / "2025-06")
    assert any(p.suffix == ".parquet" for p in qdir.rglob("*"))
    assert _partition(duckdb_wh, "2025-06") == (
        good.totals.focus_rows,
        good.totals.billed_total,
        good.totals.effective_total,
    )
    assert [a.kind for a in alerts] == ["validation_failed"] and alerts[0].facts[
        "billing_period"
    ] == "2025-06"
    log = duckdb_wh.query(
        "SELECT status, quarantine_path FROM load_log WHERE billing_period = '2025-06' ORDER BY finished_at"
    )
    assert [r[0] for r in log] == ["loaded", "quarantined"] and log[1][1] == str(qdir)


def _local_batch(files: list[Path], period: str, fp: str) -> RawBatch:
    return RawBatch(source="local", provider="aws", billing_period=period, files=files, fingerprint=fp)


def test_missing_required_column_quarantined(duckdb_wh, tmp_path, alerts):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from finops.demo.cur_generator import CUR2_SCHEMA

    tbl = pa.Table.from_pylist([cur_row(line_item_unblended_cost=1.0)], schema=CUR2_SCHEMA).drop(
        ["line_item_currency_code"]
    )
    pq.write_table(tbl, tmp_path / "m.parquet")
    entry = load_batch(
        duckdb_wh, _local_batch([tmp_path / "m.parquet"], "2025-03", "m"), aws_cur.converter_for("cur2")
    )
    assert entry.status == "quarantined" and "line_item_currency_code" in (entry.message or "")
    assert _partition(duckdb_wh, "2025-03", "local")[0] == 0 and len(alerts) == 1


def test_charge_outside_billing_period_fails_validation(duckdb_wh, tmp_path, alerts):
    rows = [
        cur_row(line_item_unblended_cost=2.0),
        cur_row(
            line_item_unblended_cost=3.0,
            line_item_usage_start_date=datetime(2025, 5, 2),
            line_item_usage_end_date=datetime(2025, 5, 3),
        ),
    ]
    f = write_cur(tmp_path / "late.parquet", rows)
    entry = load_batch(duckdb_wh, _local_batch([f], "2025-03", "late"), aws_cur.converter_for("cur2"))
    assert entry.status == "quarantined", entry.message
    assert entry.raw_billed_total == D("5") and _partition(duckdb_wh, "2025-03", "local")[0] == 0


def test_unknown_columns_non_usd_and_hostile_tags_load(duckdb_wh, awsb_bucket, awsb_source, awsb_deliver):
    hostile = {
        "user_team": "'; drop table x;--",
        'k"ey\n': "=cmd|' /C calc'!A0",
        "user_e": "🚀" + "x" * 10_000,
    }
    d = awsb_deliver(GenSpec("2025-07", rows=600, seed=9, currency="EUR", extra_tags=hostile))
    entry = _load(duckdb_wh, awsb_bucket, awsb_source(), "2025-07")
    assert entry.status == "loaded", entry.message
    assert entry.currency == "EUR" and entry.focus_billed_total == d.totals.billed_total
    assert duckdb_wh.query("SELECT DISTINCT billing_currency FROM focus_costs") == [("EUR",)]
    tags = [
        json.loads(r[0])
        for r in duckdb_wh.query(
            "SELECT CAST(tags AS VARCHAR) FROM focus_costs WHERE CAST(tags AS VARCHAR) LIKE '%drop table%'"
        )
    ]
    assert tags and all({k: t[k] for k in hostile} == hostile for t in tags)
    assert duckdb_wh.table_exists("focus_costs")  # nothing was dropped


def test_legacy_csv_e2e(duckdb_wh, awsb_bucket, awsb_source, awsb_deliver):
    d = awsb_deliver(GenSpec("2025-08", rows=900, seed=8), prefix="cur/finops-cur", fmt="csv")
    entry = _load(duckdb_wh, awsb_bucket, awsb_source(fmt="cur_legacy", prefix="cur/finops-cur"), "2025-08")
    assert entry.status == "loaded", entry.message
    assert _partition(duckdb_wh, "2025-08") == (
        d.totals.focus_rows,
        d.totals.billed_total,
        d.totals.effective_total,
    )


def test_empty_manifest_leaves_partition(duckdb_wh):
    entry = load_batch(duckdb_wh, _local_batch([], "2025-09", "none"), aws_cur.converter_for("cur2"))
    assert entry.status == "empty"
    assert duckdb_wh.query("SELECT status FROM load_log") == [("empty",)]


def test_load_id_is_deterministic():
    assert make_load_id("s", "2025-01", "a|b") == make_load_id("s", "2025-01", "a|b")
    assert make_load_id("s", "2025-01", "a|b") != make_load_id("s", "2025-01", "a|c")


@pytest.mark.postgres
def test_e2e_postgres_idempotent_and_restated(pg_wh, awsb_bucket, awsb_source, awsb_deliver):
    src = awsb_source()
    awsb_deliver(GenSpec("2025-10", rows=700, seed=10))
    first = _load(pg_wh, awsb_bucket, src, "2025-10")
    assert first.status == "loaded", first.message
    assert _load(pg_wh, awsb_bucket, src, "2025-10").status == "unchanged"
    time.sleep(1.1)
    new = awsb_deliver(GenSpec("2025-10", rows=750, seed=10, restatement=1))
    assert _load(pg_wh, awsb_bucket, src, "2025-10").status == "loaded"
    assert _partition(pg_wh, "2025-10") == (
        new.totals.focus_rows,
        new.totals.billed_total,
        new.totals.effective_total,
    )


@pytest.mark.postgres
@pytest.mark.parametrize(
    "hostile",
    [{"line_item_line_item_description": "bad\x00byte"}, {"resource_tags": {"user_team": "a\x00b"}}],
    ids=["text", "tag"],
)
def test_postgres_nul_character_is_quarantined_and_loaded_month_kept(
    pg_wh, tmp_path, alerts, finops_home, hostile
):
    """PostgreSQL text / jsonb cannot hold U+0000: a delivery carrying one is bad input, quarantined
    with the reason (not a `failed` load re-raised on every retry); the loaded month stays."""
    good = write_cur(tmp_path / "good.parquet", [cur_row(line_item_unblended_cost=2.0)])
    assert (
        load_batch(pg_wh, _local_batch([good], "2025-03", "g"), aws_cur.converter_for("cur2")).status
        == "loaded"
    )
    bad = write_cur(tmp_path / "bad.parquet", [cur_row(line_item_unblended_cost=5.0, **hostile)])
    entry = load_batch(pg_wh, _local_batch([bad], "2025-03", "b"), aws_cur.converter_for("cur2"))
    assert entry.status == "quarantined", entry.message
    assert "U+0000" in (entry.message or "") or "\\u0000 cannot be converted" in (entry.message or "")
    assert entry.quarantine_path and (Path(entry.quarantine_path) / "bad.parquet").is_file()
    assert _partition(pg_wh, "2025-03", "local") == (1, D("2"), D("2"))
    assert [r[0] for r in pg_wh.query("SELECT status FROM load_log ORDER BY finished_at")] == [
        "loaded",
        "quarantined",
    ]
    assert len(alerts) == 1 and alerts[0].kind == "validation_failed"
