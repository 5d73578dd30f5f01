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
        m = gen.manifest(
            export_name="contoso-amortized",
            run_id=run_id,
            submitted=submitted,
            blobs=[(name, len(body), len(sample.rows))],
        )
        container.upload_blob(f"{FOLDER}/{run_id}/manifest.json", json.dumps(m).encode(), overwrite=True)


def _src(container, conn, **config):
    fields = {"prefix": ROOT, "format": "amortized", **config}
    return AzureSource(name="az-main", conn_id=conn, container=container.container_name, **fields)


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
    assert total.quantize(Decimal("0.01")) == day3.billed_total.quantize(Decimal("0.01")) and n == len(
        day3.rows
    )

    # same run again: idempotent
    [again] = azure_blob.plan_batches(src, "2026-10")
    assert load_batch(duckdb_wh, again, conv).status == "unchanged"

    # a newer run (month restated) replaces, never adds
    day4 = gen.generate(layout="ea", kind="amortized", days=4)
    _put_run(az_container, "run-c", day4, "2026-10-05T06:00:00Z")
    [newer] = azure_blob.plan_batches(src, "2026-10")
    assert load_batch(duckdb_wh, newer, conv).status == "loaded"
    total, n = _total(duckdb_wh)
    assert total.quantize(Decimal("0.01")) == day4.billed_total.quantize(Decimal("0.01")) and n == len(
        day4.rows
    )


def test_bad_newest_run_is_quarantined_and_loaded_month_kept(az_container, az_conn, duckdb_wh):
    src = _src(az_container, az_conn)
    good = gen.generate(layout="mca", kind="amortized", days=2)
    _put_run(az_container, "run-1", good, "2026-10-03T06:00:00Z")
    assert (
        load_batch(
            duckdb_wh, azure_blob.plan_batches(src, "2026-10")[0], azure_blob.converter_for(src)
        ).status
        == "loaded"
    )
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
    _put_run(
        az_container,
        "run-b",
        gen.generate(layout="ea", kind="amortized", days=1),
        "2026-10-05T06:00:00Z",
        with_manifest=False,
    )
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
    m = gen.manifest(
        export_name="x",
        run_id="r0",
        submitted="2026-10-01T06:00:00Z",
        blobs=[(f"{FOLDER}/r0/part_0_0001.csv.gz", 10, 0)],
    )
    az_container.upload_blob(f"{FOLDER}/r0/manifest.json", json.dumps(m).encode())
    with pytest.raises(azure_blob.IncompleteExportError):
        azure_blob.plan_batches(src, "2026-10")
    az_container.upload_blob(f"{FOLDER}/r0/part_0_0001.csv.gz", b"")
    assert azure_blob.plan_batches(src, "2026-10") == []  # 0 data rows: an empty export loads nothing


def test_run_grouping_is_pure():
    t = datetime(2026, 10, 2, tzinfo=UTC)
    runs = azure_blob.list_runs(
        [
            (f"{FOLDER}/r1/a.csv", "e1", t),
            (f"{FOLDER}/r1/manifest.json", "m", t),
            (f"{FOLDER}/r2/a.csv", "e2", t.replace(day=3)),
            (f"{FOLDER}/notes.txt", "x", t),
        ],
        f"{FOLDER}/",
    )
    assert azure_blob.newest_run(runs).run_id == "r2"
    assert azure_blob.period_folder("exports/x/", "2024-02") == "exports/x/20240201-20240229/"


def test_download_logs_progress(az_container, az_conn, finops_home, progress_lines):
    """The blob client's progress hook feeds the progress lines of a long download."""
    sample = gen.generate(layout="ea", kind="amortized", days=1)
    _put_run(az_container, "run-p", sample, "2026-10-02T06:00:00Z")
    [batch] = azure_blob.plan_batches(_src(az_container, az_conn), "2026-10")
    size = batch.files[0].stat().st_size
    assert progress_lines and all(
        line.startswith(f"download blob {FOLDER}/run-p/part_0_0001.csv.gz: ") for line in progress_lines
    )
    assert f"of {size / 2**20:,.1f} MiB (100%)" in progress_lines[-1]


def test_older_layout_newest_file_wins(az_container, az_conn, duckdb_wh):
    """The older layout writes one more `<name>_<guid>.csv` per run beside the earlier ones, each a
    month-to-date snapshot: only the newest is the month (loading both would add day 1 twice)."""
    import time

    src = _src(az_container, az_conn)
    day1 = gen.generate(layout="ea", kind="amortized", days=1)
    day3 = gen.generate(layout="ea", kind="amortized", days=3)
    az_container.upload_blob(f"{FOLDER}/contoso-amortized_0a1b2c3d.csv", day1.csv_bytes(), overwrite=True)
    time.sleep(1.1)  # Blob Storage's last-modified has whole seconds
    az_container.upload_blob(f"{FOLDER}/contoso-amortized_9f8e7d6c.csv", day3.csv_bytes(), overwrite=True)
    [batch] = azure_blob.plan_batches(src, "2026-10")
    assert [f.name for f in batch.files] == ["contoso-amortized_9f8e7d6c.csv"] and batch.manifest_key is None
    assert load_batch(duckdb_wh, batch, azure_blob.converter_for(src)).status == "loaded"
    total, n = _total(duckdb_wh)
    assert n == len(day3.rows) and total.quantize(Decimal("0.01")) == day3.billed_total.quantize(
        Decimal("0.01")
    )


def test_partitioned_run_with_underscore_manifest(az_container, az_conn, finops_home):
    """Partitioned exports before 2023-07 name their manifest `_manifest.json`: it is honoured the same way."""
    src = _src(az_container, az_conn)
    sample = gen.generate(layout="ea", kind="amortized", days=1)
    parts = [f"{FOLDER}/run-p/contoso-amortized_run-p_00000{i}.csv" for i in (1, 2)]
    for name in parts:
        az_container.upload_blob(name, sample.csv_bytes(), overwrite=True)
    m = gen.manifest(
        export_name="contoso-amortized",
        run_id="run-p",
        submitted="2026-10-02T06:00:00Z",
        blobs=[(parts[0], 10, len(sample.rows))],
    )  # lists one part only
    az_container.upload_blob(f"{FOLDER}/run-p/_manifest.json", json.dumps(m).encode(), overwrite=True)
    [batch] = azure_blob.plan_batches(src, "2026-10")
    assert batch.manifest_key == f"{FOLDER}/run-p/_manifest.json"
    assert [f.name for f in batch.files] == ["contoso-amortized_run-p_000001.csv"]


def test_published_ea_sample_through_blob_storage(az_container, az_conn, duckdb_wh):
    """Microsoft's published EA actual-cost sample (tests/data/azure), as an older-layout export of
    September 2023 in Blob Storage -> the source -> the spine: loads to the cent, twice changes nothing."""
    import csv
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "data" / "azure" / "ea-actual-small.csv"
    with open(data, newline="", encoding="utf-8-sig") as fh:
        want = sum(Decimal(r["Cost"]) for r in csv.DictReader(fh))
    root = "exports/trey-actual"
    az_container.upload_blob(f"{root}/20230901-20230930/trey-actual_5b1f0e2a.csv", data.read_bytes())
    src = _src(az_container, az_conn, prefix=root, format="actual", agreement="ea")
    [batch] = azure_blob.plan_batches(src, "2023-09")
    conv = azure_blob.converter_for(src)
    assert conv.agreement == "ea"
    assert load_batch(duckdb_wh, batch, conv).status == "loaded"
    total, n = _total(duckdb_wh)
    assert n == 11 and total.quantize(Decimal("0.01")) == want.quantize(Decimal("0.01"))
    [again] = azure_blob.plan_batches(src, "2023-09")
    assert load_batch(duckdb_wh, again, conv).status == "unchanged" and _total(duckdb_wh) == (total, n)


@pytest.mark.parametrize(
    ("agreement", "account"),
    [("mca", "PROF-1"), ("auto", "PROF-1"), ("ea", "a1b2c3d4-0000-4000-8000-123456789abc:e5f6_2019-05-31")],
)
def test_configured_agreement_decides_the_billing_account(
    az_container, az_conn, duckdb_wh, agreement, account
):
    """MCA: FOCUS's billing account is the billing profile (what the invoice is issued to); `auto`
    detects MCA from the invoiceId column; a source configured `ea` keeps the billing account."""
    src = _src(az_container, az_conn, agreement=agreement)
    sample = gen.generate(layout="mca", kind="amortized", days=1)
    _put_run(az_container, "run-m", sample, "2026-10-02T06:00:00Z")
    [batch] = azure_blob.plan_batches(src, "2026-10")
    assert load_batch(duckdb_wh, batch, azure_blob.converter_for(src)).status == "loaded"
    got = duckdb_wh.query("SELECT DISTINCT billing_account_id, invoice_id FROM focus_costs")
    assert got == [(account, "G012345678")]
