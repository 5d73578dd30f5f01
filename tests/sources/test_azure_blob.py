"""Azure source against Azurite (real Blob API through WasbHook) -> spine -> DuckDB:
newest run wins (month-to-date overwrite), manifests honoured, bad runs quarantined."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from finops.config import AzureSource
from finops.demo import azure_generator as gen
from finops.ingest import load_batch
from finops.sources import azure_blob

ROOT = "exports/contoso-amortized"
FOLDER = f"{ROOT}/20261001-20261031"


def _put_run(container, run_id, sample, submitted, *, with_manifest=True, data=None):
    name = f"{FOLDER}/{run_id}/part_0_0001.csv.gz"
    body = data if data is not None else sample.csv_bytes(gz=True)
    container.upload_blob(name, body, overwrite=True)
    if with_manifest:
        m = gen.manifest(export_name="contoso-amortized", run_id=run_id, submitted=submitted,
                         blobs=[(name, len(body), len(sample.rows))])
        container.upload_blob(f"{FOLDER}/{run_id}/manifest.json", json.dumps(m).encode(), overwrite=True)


def _src(container, conn):
    return AzureSource(name="az-main", conn_id=conn, container=container.container_name, prefix=ROOT,
                       format="amortized")


def _total(wh):
    return wh.query("SELECT sum(billed_cost), count(*) FROM focus_costs WHERE x_source = 'az-main'")[0]


def test_newest_run_replaces_month_to_date(az_container, az_conn, duckdb_wh):
    src = _src(az_container, az_conn)
    day1 = gen.generate(layout="ea", kind="amortized", days=1)
    day3 = gen.generate(layout="ea", kind="amortized", days=3)
    _put_run(az_container, "run-b", day3, "2026-10-04T06:00:00Z")
    _put_run(az_container, "run-a", day1, "2026-10-02T06:00:00Z")  # uploaded later, but an older run
    [batch] = azure_blob.plan_batches(src, "2026-10")
    assert batch.assembly_id == "run-b" and batch.manifest_key.endswith("run-b/manifest.json")
    conv = azure_blob.converter_for(src)
    assert load_batch(duckdb_wh, batch, conv).status == "loaded"
    total, n = _total(duckdb_wh)
    assert total.quantize(Decimal("0.01")) == day3.billed_total.quantize(Decimal("0.01")) and n == len(day3.rows)

    # same run again: idempotent
    [again] = azure_blob.plan_batches(src, "2026-10")
    assert load_batch(duckdb_wh, again, conv).status == "unchanged"

    # a newer run (month restated) replaces, never adds
    day4 = gen.generate(layout="ea", kind="amortized", days=4)
    _put_run(az_container, "run-c", day4, "2026-10-05T06:00:00Z")
    [newer] = azure_blob.plan_batches(src, "2026-10")
    assert load_batch(duckdb_wh, newer, conv).status == "loaded"
    total, n = _total(duckdb_wh)
    assert total.quantize(Decimal("0.01")) == day4.billed_total.quantize(Decimal("0.01")) and n == len(day4.rows)


def test_bad_newest_run_is_quarantined_and_loaded_month_kept(az_container, az_conn, duckdb_wh):
    src = _src(az_container, az_conn)
    good = gen.generate(layout="mca", kind="amortized", days=2)
    _put_run(az_container, "run-1", good, "2026-10-03T06:00:00Z")
    assert load_batch(duckdb_wh, azure_blob.plan_batches(src, "2026-10")[0], azure_blob.converter_for(src)).status == "loaded"
    before = _total(duckdb_wh)
    text = gen.generate(layout="mca", kind="amortized", days=3).csv_bytes().decode("utf-8-sig")
    broken = gzip.compress(text.replace('""env"": ""prod""}"', '""env"": ""prod"""', 1).encode())
    _put_run(az_container, "run-2", good, "2026-10-04T06:00:00Z", data=broken)
    [batch] = azure_blob.plan_batches(src, "2026-10")
    entry = load_batch(duckdb_wh, batch, azure_blob.converter_for(src))
    assert entry.status == "quarantined" and "Tags is not valid JSON" in entry.message
    assert _total(duckdb_wh) == before  # partition untouched
    from pathlib import Path

    assert any(p.name == "part_0_0001.csv.gz" for p in Path(entry.quarantine_path).rglob("*"))  # nothing lost


def test_run_still_being_written_never_replaces_the_month(az_container, az_conn, duckdb_wh):
    # regression: a run folder whose first part file is up but whose manifest (written last) is not yet
    # was taken as the newest run and replaced the loaded 3-day month with 1 day of data
    src = _src(az_container, az_conn)
    day3 = gen.generate(layout="ea", kind="amortized", days=3)
    _put_run(az_container, "run-a", day3, "2026-10-04T06:00:00Z")
    conv = azure_blob.converter_for(src)
    assert load_batch(duckdb_wh, azure_blob.plan_batches(src, "2026-10")[0], conv).status == "loaded"
    before = _total(duckdb_wh)
    _put_run(az_container, "run-b", gen.generate(layout="ea", kind="amortized", days=1), "2026-10-05T06:00:00Z",
             with_manifest=False)
    [batch] = azure_blob.plan_batches(src, "2026-10")
    assert batch.assembly_id == "run-a"
    assert load_batch(duckdb_wh, batch, conv).status == "unchanged" and _total(duckdb_wh) == before
    # once its manifest lands, the run is complete and replaces the month
    day4 = gen.generate(layout="ea", kind="amortized", days=4)
    _put_run(az_container, "run-b", day4, "2026-10-05T06:00:00Z")
    [batch] = azure_blob.plan_batches(src, "2026-10")
    assert batch.assembly_id == "run-b" and load_batch(duckdb_wh, batch, conv).status == "loaded"
    assert _total(duckdb_wh)[1] == len(day4.rows)


def test_legacy_layout_without_manifest(az_container, az_conn, finops_home):
    src = _src(az_container, az_conn)
    sample = gen.generate(layout="ea", kind="amortized", days=1)
    az_container.upload_blob(f"{FOLDER}/contoso-amortized_6d3f1e0a.csv", sample.csv_bytes(), overwrite=True)
    [batch] = azure_blob.plan_batches(src, "2026-10")
    assert [f.name for f in batch.files] == ["contoso-amortized_6d3f1e0a.csv"] and batch.manifest_key is None


def test_incomplete_and_empty_runs(az_container, az_conn, finops_home):
    src = _src(az_container, az_conn)
    assert azure_blob.plan_batches(src, "2026-10") == []  # nothing exported yet
    m = gen.manifest(export_name="x", run_id="r0", submitted="2026-10-01T06:00:00Z",
                     blobs=[(f"{FOLDER}/r0/part_0_0001.csv.gz", 10, 0)])
    az_container.upload_blob(f"{FOLDER}/r0/manifest.json", json.dumps(m).encode())
    with pytest.raises(azure_blob.IncompleteExportError):
        azure_blob.plan_batches(src, "2026-10")
    az_container.upload_blob(f"{FOLDER}/r0/part_0_0001.csv.gz", b"")
    assert azure_blob.plan_batches(src, "2026-10") == []  # 0 data rows: an empty export loads nothing


def test_run_grouping_is_pure():
    t = datetime(2026, 10, 2, tzinfo=UTC)
    runs = azure_blob.list_runs([(f"{FOLDER}/r1/a.csv", "e1", t), (f"{FOLDER}/r1/manifest.json", "m", t),
                                 (f"{FOLDER}/r2/a.csv", "e2", t.replace(day=3)), (f"{FOLDER}/notes.txt", "x", t)], f"{FOLDER}/")
    assert azure_blob.newest_run(runs).run_id == "r2"
    assert azure_blob.period_folder("exports/x/", "2024-02") == "exports/x/20240201-20240229/"


def test_download_logs_progress(az_container, az_conn, finops_home, progress_lines):
    """The blob client's progress hook feeds the progress lines of a long download."""
    sample = gen.generate(layout="ea", kind="amortized", days=1)
    _put_run(az_container, "run-p", sample, "2026-10-02T06:00:00Z")
    [batch] = azure_blob.plan_batches(_src(az_container, az_conn), "2026-10")
    size = batch.files[0].stat().st_size
    assert progress_lines and all(line.startswith(f"download blob {FOLDER}/run-p/part_0_0001.csv.gz: ")
                                  for line in progress_lines)
    assert f"of {size / 2**20:,.1f} MiB (100%)" in progress_lines[-1]
