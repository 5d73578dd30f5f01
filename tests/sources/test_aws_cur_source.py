"""AWS CUR extractor against a real moto S3 server, through the Amazon provider's S3Hook."""

from __future__ import annotations

import json
import time

import pytest

from finops.demo.cur_generator import GenSpec
from finops.sources import aws_cur
from finops.sources.aws_cur import ManifestError

PREFIX = "exports/finops-export"


def test_cur2_newest_manifest_and_download(awsb_bucket, awsb_source, awsb_deliver, finops_home):
    d = awsb_deliver(GenSpec("2025-01", rows=300, seed=1))
    src = awsb_source()
    batch = aws_cur.fetch_batch(
        src, "2025-01"
    )  # client built from the Airflow connection (endpoint_url extra)
    assert batch is not None
    assert batch.manifest_key == f"{PREFIX}/{d.manifest_key}"
    assert batch.assembly_id == d.execution_id and batch.provider == "aws" and batch.source == "main-payer"
    assert len(batch.files) == 1 and batch.files[0].exists()
    assert batch.files[0].is_relative_to(finops_home / "raw" / "main-payer" / "2025-01" / d.execution_id)
    assert batch.files[0].read_bytes() == (awsb_bucket.workdir / "d1" / d.data_keys[0]).read_bytes()
    assert batch.fingerprint.startswith(d.execution_id + "|")
    again = aws_cur.fetch_batch(src, "2025-01")
    assert again is not None and again.fingerprint == batch.fingerprint  # stable delivery id
    assert aws_cur.available_periods(src) == ["2025-01"]


def test_restated_delivery_wins_and_old_snapshot_is_dropped(
    awsb_bucket, awsb_source, awsb_deliver, finops_home
):
    first = awsb_deliver(GenSpec("2025-02", rows=200, seed=1))
    b1 = aws_cur.fetch_batch(awsb_source(), "2025-02", client=awsb_bucket.client)
    time.sleep(1.1)  # S3 LastModified has 1 s resolution
    second = awsb_deliver(GenSpec("2025-02", rows=200, seed=1, restatement=1))
    b2 = aws_cur.fetch_batch(awsb_source(), "2025-02", client=awsb_bucket.client)
    assert b1 and b2 and b2.assembly_id == second.execution_id != first.execution_id
    assert b2.fingerprint != b1.fingerprint
    assert not b1.files[0].exists()  # older snapshot removed from the raw cache
    # both data folders are still in S3: only the manifest decides what counts
    assert len([k for k in awsb_bucket.keys(f"{PREFIX}/data/") if k.endswith(".parquet")]) == 2


def test_data_without_manifest_is_ignored(awsb_bucket, awsb_source, finops_home, caplog):
    awsb_bucket.put(
        f"{PREFIX}/data/BILLING_PERIOD=2025-03/x/finops-export-00001.snappy.parquet", b"PAR1 stray"
    )
    with caplog.at_level("WARNING"):
        assert aws_cur.fetch_batch(awsb_source(), "2025-03", client=awsb_bucket.client) is None
    assert "without a manifest" in caplog.text
    scan = aws_cur.scan_cur2(awsb_bucket.client, awsb_bucket.name, PREFIX, "2025-03")
    assert scan.manifest_key is None and len(scan.orphan_data_keys) == 1
    assert aws_cur.fetch_batch(awsb_source(), "2025-04", client=awsb_bucket.client) is None  # nothing at all


def test_manifest_listing_missing_files_is_an_error(awsb_bucket, awsb_source, finops_home):
    manifest = {
        "executionId": "exec-1",
        "billingPeriod": {"start": "2025-05-01T00:00:00.000Z"},
        "dataFiles": [
            f"s3://{awsb_bucket.name}/{PREFIX}/data/BILLING_PERIOD=2025-05/exec-1/gone-00001.snappy.parquet"
        ],
    }
    awsb_bucket.put(
        f"{PREFIX}/metadata/BILLING_PERIOD=2025-05/finops-export-Manifest.json", json.dumps(manifest)
    )
    with pytest.raises(ManifestError, match="missing from s3://billing.*gone-00001"):
        aws_cur.fetch_batch(awsb_source(), "2025-05", client=awsb_bucket.client)


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", json.dumps({"executionId": "e"}).encode()])
def test_broken_manifest_is_an_error(awsb_bucket, awsb_source, finops_home, body):
    awsb_bucket.put(f"{PREFIX}/metadata/BILLING_PERIOD=2025-06/finops-export-Manifest.json", body)
    with pytest.raises(ManifestError):
        aws_cur.fetch_batch(awsb_source(), "2025-06", client=awsb_bucket.client)


def test_manifest_cannot_point_outside_the_bucket(awsb_bucket, awsb_source, finops_home):
    manifest = {"executionId": "e", "dataFiles": ["s3://someone-elses-bucket/secret.parquet"]}
    awsb_bucket.put(
        f"{PREFIX}/metadata/BILLING_PERIOD=2025-07/finops-export-Manifest.json", json.dumps(manifest)
    )
    with pytest.raises(ManifestError, match="outside the source bucket"):
        aws_cur.fetch_batch(awsb_source(), "2025-07", client=awsb_bucket.client)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_legacy_cur_assembly(awsb_bucket, awsb_source, awsb_deliver, finops_home, fmt):
    prefix = "cur/finops-cur"
    old = awsb_deliver(GenSpec("2025-01", rows=150, seed=2), prefix=prefix, fmt=fmt)
    time.sleep(1.1)
    new = awsb_deliver(GenSpec("2025-01", rows=150, seed=2, restatement=1), prefix=prefix, fmt=fmt)
    src = awsb_source(fmt="cur_legacy", prefix=prefix)
    batch = aws_cur.fetch_batch(src, "2025-01", client=awsb_bucket.client)
    assert batch is not None and batch.assembly_id == new.execution_id != old.execution_id
    assert batch.manifest_key == f"{prefix}/20250101-20250201/finops-cur-Manifest.json"
    assert [p.name.split("-", 1)[1] for p in batch.files] == [new.data_keys[0].rsplit("/", 1)[1]]
    assert aws_cur.available_periods(src, client=awsb_bucket.client) == ["2025-01"]


def test_bad_period_and_format_rejected(awsb_source):
    with pytest.raises(ValueError, match="YYYY-MM"):
        aws_cur.scan_cur2(None, "b", "p", "2025-13")
    with pytest.raises(ValueError, match="unknown AWS billing format"):
        aws_cur.converter_for("cur3")


def test_download_logs_progress(awsb_bucket, awsb_source, awsb_deliver, finops_home, progress_lines):
    """boto3's transfer callback feeds the progress lines of a long download (interval 0: every chunk)."""
    d = awsb_deliver(GenSpec("2025-01", rows=300, seed=1))
    batch = aws_cur.fetch_batch(awsb_source(), "2025-01")  # through the provider's S3Hook
    assert batch is not None
    size = batch.files[0].stat().st_size
    lines = progress_lines
    assert lines and all(
        line.startswith(f"download s3://{awsb_bucket.name}/{PREFIX}/{d.data_keys[0]}: ") for line in lines
    )
    assert f"of {size / 2**20:,.1f} MiB (100%)" in lines[-1]


def _focus_part() -> bytes:
    """A FOCUS 1.2 with AWS columns part (AWS's documented column list), two rows."""
    import io
    from datetime import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    from finops.focus.aws_columns import FOCUS_1_2_AWS_COLUMNS

    def kind(c: str) -> pa.DataType:
        if c in ("Tags", "SkuPriceDetails"):
            return pa.map_(pa.string(), pa.string())
        if c == "x_Discounts":
            return pa.map_(pa.string(), pa.float64())
        if c.endswith(("PeriodStart", "PeriodEnd")):
            return pa.timestamp("ms")
        return pa.float64() if c.endswith(("Cost", "Price", "Quantity")) else pa.string()

    row = {
        "BilledCost": 1.25,
        "BillingCurrency": "USD",
        "BillingAccountId": "111111111111",
        "ChargeCategory": "Usage",
        "BillingPeriodStart": datetime(2025, 3, 1),
        "BillingPeriodEnd": datetime(2025, 4, 1),
        "ChargePeriodStart": datetime(2025, 3, 2),
        "ChargePeriodEnd": datetime(2025, 3, 3),
        "ServiceName": "AWS Lambda",
        "ServiceCategory": "Compute",
    }
    rows = [row, dict(row, BilledCost=0.0000000001)]
    schema = pa.schema([(c, kind(c)) for c in FOCUS_1_2_AWS_COLUMNS])
    buf = io.BytesIO()
    pq.write_table(
        pa.Table.from_pylist([{c: r.get(c) for c in FOCUS_1_2_AWS_COLUMNS} for r in rows], schema=schema), buf
    )
    return buf.getvalue()


def test_focus_export_delivery_overwrite_layout(awsb_bucket, awsb_source, finops_home, tmp_path):
    """A Data Exports FOCUS export with 'overwrite' delivery: data files straight under
    data/BILLING_PERIOD=YYYY-MM/ (no execution folder), the manifest in metadata/. The same
    manifest-driven scan as CUR 2.0 finds it, and the FOCUS converter loads it exactly."""
    from decimal import Decimal

    from finops.focus.aws_focus import AwsFocusConverter
    from tests.fixtures.focus_convert import convert

    prefix = "exports/focus-export"
    data_key = f"{prefix}/data/BILLING_PERIOD=2025-03/focus-export-00001.snappy.parquet"
    awsb_bucket.put(data_key, _focus_part())
    manifest = {
        "executionId": "0a1b2c3d-exec",
        "exportName": "focus-export",
        "billingPeriod": {"start": "2025-03-01T00:00:00.000Z", "end": "2025-04-01T00:00:00.000Z"},
        "dataFiles": [f"s3://{awsb_bucket.name}/{data_key}"],
    }
    awsb_bucket.put(
        f"{prefix}/metadata/BILLING_PERIOD=2025-03/focus-export-Manifest.json", json.dumps(manifest)
    )
    src = awsb_source(fmt="focus", prefix=prefix)
    batch = aws_cur.fetch_batch(src, "2025-03", client=awsb_bucket.client)
    assert batch is not None and batch.assembly_id == "0a1b2c3d-exec" and len(batch.files) == 1
    assert aws_cur.available_periods(src, client=awsb_bucket.client) == ["2025-03"]
    res, rows = convert(
        aws_cur.converter_for("focus"), batch.files, provider="aws", period="2025-03", tmp=tmp_path
    )
    assert isinstance(aws_cur.converter_for("focus"), AwsFocusConverter)
    assert res.raw_billed_total == res.focus_billed_total == Decimal("1.2500000001")
    assert {r["service_subcategory"] for r in rows} == {
        "Serverless Compute"
    }  # blank: Lambda's, as CUR maps it


def test_legacy_overwrite_layout_with_published_sample(awsb_bucket, awsb_source, finops_home, tmp_path):
    """Legacy CUR set to overwrite its report: the part lies straight in the period folder, next to
    the manifest (no assembly sub-folder). A published sample (tests/data/aws) delivered that way
    is found through its manifest and converts to the cent."""
    import gzip
    from decimal import Decimal
    from pathlib import Path

    from tests.fixtures.focus_convert import convert

    sample = Path(__file__).resolve().parents[1] / "data" / "aws" / "koku_test_cur_sample.csv"
    folder = "cur/finops-cur/20180601-20180701"
    awsb_bucket.put(f"{folder}/finops-cur-00001.csv.gz", gzip.compress(sample.read_bytes()))
    manifest = {
        "assemblyId": "a1b2c3",
        "reportKeys": [f"{folder}/finops-cur-00001.csv.gz"],
        "billingPeriod": {"start": "20180601T000000.000Z", "end": "20180701T000000.000Z"},
    }
    awsb_bucket.put(f"{folder}/finops-cur-Manifest.json", json.dumps(manifest))
    src = awsb_source(fmt="cur_legacy", prefix="cur/finops-cur")
    batch = aws_cur.fetch_batch(src, "2018-06", client=awsb_bucket.client)
    assert batch is not None and batch.assembly_id == "a1b2c3" and len(batch.files) == 1
    res, rows = convert(
        aws_cur.converter_for("cur_legacy"), batch.files, provider="aws", period="2018-06", tmp=tmp_path
    )
    assert res.raw_billed_total == res.focus_billed_total and len(rows) == 17
    assert res.focus_billed_total.quantize(Decimal("0.01")) == Decimal("533.54")
