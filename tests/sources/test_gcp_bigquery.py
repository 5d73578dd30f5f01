"""GCP source against bqemulator (real BigQuery REST API, real BigQueryHook, nested export schema)
-> spine -> DuckDB warehouse: totals to the cent, idempotent reload, late rows picked up."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from finops.config import GcpSource
from finops.demo import gcp_generator as gen
from finops.ingest import load_batch
from finops.sources import gcp_bigquery


def _schema(fields):
    from google.cloud import bigquery

    return [
        bigquery.SchemaField(
            f["name"], f["type"], mode=f.get("mode", "NULLABLE"), fields=_schema(f.get("fields", []))
        )
        for f in fields
    ]


@pytest.fixture
def gcp_export(gcp_bq_client, gcp_conn):
    """A fresh export table holding 2 days of 2026-10; returns (source cfg, sample, table)."""
    from google.cloud import bigquery

    gcp_bq_client.create_dataset("billing", exists_ok=True)
    name = f"gcp_billing_export_resource_v1_{uuid.uuid4().hex[:8]}"
    table = bigquery.Table(f"billing-proj.billing.{name}", schema=_schema(gen.BQ_SCHEMA))
    gcp_bq_client.create_table(table)
    sample = gen.generate(period="2026-10", days=1)
    assert gcp_bq_client.insert_rows_json(table, sample.json_rows()) == []
    src = GcpSource(name="gcp-main", conn_id=gcp_conn, project="billing-proj", dataset="billing", table=name)
    return src, sample, table


def _total(wh):
    return wh.query("SELECT sum(billed_cost), count(*) FROM focus_costs WHERE x_source = 'gcp-main'")[0]


def test_extract_load_reload_late_rows(gcp_export, gcp_bq_client, duckdb_wh, progress_lines):
    src, sample, table = gcp_export
    batches = gcp_bigquery.plan_batches(src, "2026-10")
    assert len(batches) == 1 and batches[0].files[0].exists()
    n_rows = len(sample.rows)
    assert progress_lines and progress_lines[-1].startswith(
        f"gcp-main 2026-10: BigQuery extract: {n_rows:,} of {n_rows:,} rows (100%), "
    )
    conv = gcp_bigquery.converter_for(src)
    entry = load_batch(duckdb_wh, batches[0], conv)
    assert entry.status == "loaded", entry.message
    total, n = _total(duckdb_wh)
    assert total.quantize(Decimal("0.01")) == sample.billed_total.quantize(Decimal("0.01"))
    assert entry.raw_billed_total == entry.focus_billed_total == total
    assert n == len(sample.rows) + sample.promotion_credit_rows

    # same delivery again: recorded as unchanged, warehouse identical
    again = gcp_bigquery.plan_batches(src, "2026-10")
    assert again[0].fingerprint == batches[0].fingerprint
    assert load_batch(duckdb_wh, again[0], conv).status == "unchanged"
    assert _total(duckdb_wh) == (total, n)

    # late rows for the same invoice month (export_time days later) -> new delivery, replaced not added
    late = gen.late_rows(sample, n=3, lag_days=4)
    assert gcp_bq_client.insert_rows_json(table, gen.GcpSample(late, "202610", 0, 0).json_rows()) == []
    third = gcp_bigquery.plan_batches(src, "2026-10")
    assert third[0].fingerprint != batches[0].fingerprint
    assert load_batch(duckdb_wh, third[0], conv).status == "loaded"
    expected = sample.billed_total + sum(Decimal(repr(r["cost"])) for r in late)
    total2, n2 = _total(duckdb_wh)
    assert total2.quantize(Decimal("0.01")) == expected.quantize(Decimal("0.01"))
    assert n2 == n + 3
    log = duckdb_wh.query("SELECT status FROM load_log WHERE source = 'gcp-main' ORDER BY finished_at")
    assert [r[0] for r in log] == ["loaded", "unchanged", "loaded"]


def test_empty_month_and_bad_identifiers(gcp_export):
    src, _, _ = gcp_export
    assert gcp_bigquery.plan_batches(src, "2026-08") == []
    bad = src.model_copy(update={"table": "x`; DROP TABLE y; --"})
    with pytest.raises(ValueError, match="not a valid BigQuery identifier"):
        gcp_bigquery.plan_batches(bad, "2026-10")
    with pytest.raises(ValueError, match="not supported"):
        gcp_bigquery.converter_for(src.model_copy(update={"format": "other"}))


def test_large_result_is_read_through_the_storage_read_api(gcp_export, gcp_bq_server, duckdb_wh, monkeypatch):
    """A result several pages long goes through the Storage Read API (gRPC CreateReadSession +
    ReadRows on the emulator), as it does on BigQuery for a month of a detailed export; the
    parquet it writes loads to the same cent as the REST pages'."""
    from finops.demo.emulators import STORAGE_READ_SESSIONS

    src, sample, _table = gcp_export
    monkeypatch.setattr(gcp_bigquery, "PAGE_SIZE", 5)  # the client reads >3 pages over gRPC
    before = STORAGE_READ_SESSIONS.get(gcp_bq_server, 0)
    batches = gcp_bigquery.plan_batches(src, "2026-10")
    assert STORAGE_READ_SESSIONS.get(gcp_bq_server, 0) == before + 1
    entry = load_batch(duckdb_wh, batches[0], gcp_bigquery.converter_for(src))
    assert entry.status == "loaded", entry.message
    total, n = _total(duckdb_wh)
    assert total.quantize(Decimal("0.01")) == sample.billed_total.quantize(Decimal("0.01"))
    assert n == len(sample.rows) + sample.promotion_credit_rows


def test_emulator_without_a_grpc_endpoint_reads_rest_pages(gcp_export, monkeypatch):
    import json
    import os

    import pyarrow.parquet as pq

    from finops.demo.emulators import conn_env_var

    src, sample, _table = gcp_export
    conn = json.loads(os.environ[conn_env_var(src.conn_id)])
    conn["extra"].pop("storage_api_endpoint")
    monkeypatch.setenv(conn_env_var(src.conn_id), json.dumps(conn))
    assert gcp_bigquery.bqstorage_client(src.conn_id) is None
    monkeypatch.setattr(gcp_bigquery, "PAGE_SIZE", 5)
    batches = gcp_bigquery.plan_batches(src, "2026-10")
    assert pq.read_metadata(batches[0].files[0]).num_rows == len(sample.rows)
