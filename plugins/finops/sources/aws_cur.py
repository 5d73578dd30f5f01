"""AWS billing extractor: CUR 2.0 / Data Exports (incl. AWS's FOCUS export) and legacy CUR
from S3, through the Amazon provider's S3Hook (endpoint_url from the connection extra, so
moto works the same as AWS).

Manifests decide what counts: each delivery is a full month-to-date snapshot that replaces the
one before, so only the newest manifest / assembly of a period is loaded (never added to it); data without a manifest is
ignored (and reported); a manifest whose files are missing is an error. Files are streamed
to FINOPS_HOME/raw/<source>/<period>/<assembly>/ (boto3 download_file: bounded memory).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finops.batch import Converter, RawBatch
from finops.paths import path_segment, subdir
from finops.periods import check_period
from finops.progress import Progress
from finops.sources import DeliveryError

if TYPE_CHECKING:
    from finops.config import AwsSource

log = logging.getLogger(__name__)

_SAFE = re.compile(r"[^A-Za-z0-9._=-]+")


class ManifestError(DeliveryError):
    """A manifest is unreadable or lists data files that are not in the bucket."""


@dataclass
class PeriodScan:
    """What S3 holds for one billing period."""

    period: str
    manifest_key: str | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    data_keys: list[str] = field(default_factory=list)  # files the chosen manifest lists
    orphan_data_keys: list[str] = field(default_factory=list)  # data present with no manifest at all
    superseded_manifests: list[str] = field(default_factory=list)

    @property
    def assembly_id(self) -> str | None:
        return self.manifest.get("executionId") or self.manifest.get("assemblyId")


def converter_for(fmt: str) -> Converter:
    """The FOCUS converter for a configured AWS `format` (cur2 | cur_legacy | focus)."""
    if fmt == "cur2":
        from finops.focus.aws_cur_mapping import Cur2Converter

        return Cur2Converter()
    if fmt == "cur_legacy":
        from finops.focus.aws_cur_mapping import CurLegacyConverter

        return CurLegacyConverter()
    if fmt == "focus":
        from finops.focus.aws_focus import AwsFocusConverter

        return AwsFocusConverter()
    raise ValueError(f"unknown AWS billing format {fmt!r} (expected cur2, cur_legacy or focus)")


def s3_client(conn_id: str) -> Any:
    """boto3 S3 client from the Airflow connection (endpoint_url / region from its extra)."""
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    return S3Hook(aws_conn_id=conn_id).get_conn()


# --------------------------------------------------------------------------- listing
def _list(client: Any, bucket: str, prefix: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out.extend(page.get("Contents", []))
    return out


def _period_range(period: str) -> str:
    y, m = map(int, period.split("-"))
    ny, nm = (y + 1, 1) if m == 12 else (y, m + 1)
    return f"{y:04d}{m:02d}01-{ny:04d}{nm:02d}01"


def _newest(objs: list[dict[str, Any]]) -> dict[str, Any] | None:
    return max(objs, key=lambda o: (o["LastModified"], o["Key"])) if objs else None


def _read_json(client: Any, bucket: str, key: str) -> dict[str, Any]:
    try:
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        data = json.loads(body)
    except Exception as e:  # noqa: BLE001 - any parse / read problem is a manifest problem
        raise ManifestError(f"cannot read manifest s3://{bucket}/{key}: {e}") from e
    if not isinstance(data, dict):
        raise ManifestError(f"manifest s3://{bucket}/{key} is not a JSON object")
    return data


def _key_from_ref(ref: str, bucket: str) -> str:
    """dataFiles hold `s3://bucket/key`; reportKeys hold bucket-relative keys."""
    if ref.startswith("s3://"):
        b, _, key = ref[5:].partition("/")
        if b != bucket:
            raise ManifestError(f"manifest points outside the source bucket: {ref}")
        return key
    return ref.lstrip("/")


def scan_cur2(client: Any, bucket: str, prefix: str, period: str) -> PeriodScan:
    """CUR 2.0 / Data Exports: metadata/BILLING_PERIOD=YYYY-MM/<export>-Manifest.json."""
    check_period(period)
    root = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
    scan = PeriodScan(period)
    manifests = [
        o
        for o in _list(client, bucket, f"{root}metadata/BILLING_PERIOD={period}/")
        if o["Key"].endswith("Manifest.json")
    ]
    newest = _newest(manifests)
    data = [
        o["Key"]
        for o in _list(client, bucket, f"{root}data/BILLING_PERIOD={period}/")
        if not o["Key"].endswith("/")
    ]
    if newest is None:
        scan.orphan_data_keys = data
        return scan
    scan.manifest_key = newest["Key"]
    scan.superseded_manifests = [o["Key"] for o in manifests if o is not newest]
    scan.manifest = _read_json(client, bucket, newest["Key"])
    refs = scan.manifest.get("dataFiles")
    if not isinstance(refs, list):
        raise ManifestError(f"manifest s3://{bucket}/{newest['Key']} has no dataFiles list")
    scan.data_keys = [_key_from_ref(str(r), bucket) for r in refs]
    return scan


def scan_legacy(
    client: Any, bucket: str, prefix: str, period: str, report_name: str | None = None
) -> PeriodScan:
    """Legacy CUR: <report prefix>/<YYYYMMDD-YYYYMMDD>/<report>-Manifest.json (the newest
    assembly; per-assembly copies live in <assemblyId>/ subfolders)."""
    check_period(period)
    base = prefix.strip("/")
    report = report_name or (base.rsplit("/", 1)[-1] if base else "")
    if report_name and base and not base.endswith(report_name):
        base = f"{base}/{report_name}"
    folder = f"{base}/{_period_range(period)}/" if base else f"{_period_range(period)}/"
    scan = PeriodScan(period)
    objs = _list(client, bucket, folder)
    manifests = [
        o
        for o in objs
        if o["Key"].endswith("-Manifest.json")
        and (not report or o["Key"].rsplit("/", 1)[-1] == f"{report}-Manifest.json")
    ]
    top = [o for o in manifests if "/" not in o["Key"][len(folder) :]]
    newest = _newest(top) or _newest(manifests)
    data = [o["Key"] for o in objs if not o["Key"].endswith(".json") and not o["Key"].endswith("/")]
    if newest is None:
        scan.orphan_data_keys = data
        return scan
    scan.manifest_key = newest["Key"]
    scan.manifest = _read_json(client, bucket, newest["Key"])
    keys = scan.manifest.get("reportKeys")
    if not isinstance(keys, list) or not scan.manifest.get("assemblyId"):
        raise ManifestError(f"legacy manifest s3://{bucket}/{newest['Key']} lacks assemblyId / reportKeys")
    scan.data_keys = [_key_from_ref(str(k), bucket) for k in keys]
    scan.superseded_manifests = [
        o["Key"] for o in manifests if o is not newest and scan.manifest["assemblyId"] not in o["Key"]
    ]
    return scan


# --------------------------------------------------------------------------- download
def _download(client: Any, bucket: str, keys: list[str], dest: Path) -> tuple[list[Path], list[str]]:
    """Stream each key to dest (temp name, then rename). Returns paths and ETags."""
    dest.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    etags: list[str] = []
    missing: list[str] = []
    heads: list[dict[str, Any]] = []
    for key in keys:
        try:
            heads.append(client.head_object(Bucket=bucket, Key=key))
        except Exception as e:  # noqa: BLE001
            code = getattr(e, "response", {}).get("Error", {}).get("Code", "")
            if code in ("404", "NoSuchKey", "NotFound"):
                missing.append(key)
                continue
            raise
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise ManifestError(f"manifest lists {len(missing)} data file(s) missing from s3://{bucket}: {shown}")
    for i, (key, head) in enumerate(zip(keys, heads, strict=True)):
        name = f"{i:05d}-{_SAFE.sub('_', key.rsplit('/', 1)[-1])[:150]}"
        target = dest / name
        etag = str(head.get("ETag", "")).strip('"')
        size = int(head.get("ContentLength", -1))
        marker = target.with_name(target.name + ".etag")
        if not (
            target.exists()
            and target.stat().st_size == size
            and marker.exists()
            and marker.read_text() == etag
        ):
            part = target.with_name(target.name + ".part")
            progress = Progress(
                f"download s3://{bucket}/{key}", total=size if size > 0 else None, unit="bytes"
            )
            client.download_file(bucket, key, str(part), Callback=progress.add)
            part.replace(target)
            marker.write_text(etag)
        paths.append(target)
        etags.append(etag)
    return paths, etags


def fetch_batch(
    source: AwsSource, period: str, *, client: Any | None = None, raw_root: Path | None = None
) -> RawBatch | None:
    """Find the newest manifest of `period`, download its files, return the RawBatch.

    None when the period has no manifest yet (data without a manifest is logged and
    ignored: AWS writes the manifest last). Raises ManifestError when the manifest is
    broken or its files are missing."""
    client = client or s3_client(source.conn_id)
    if source.format == "cur_legacy":
        scan = scan_legacy(client, source.bucket, source.prefix, period, source.report_name)
    else:
        scan = scan_cur2(client, source.bucket, source.prefix, period)
    if scan.manifest_key is None:
        if scan.orphan_data_keys:
            log.warning(
                "%s %s: %d data file(s) without a manifest ignored (delivery in progress or stray files): %s",
                source.name,
                period,
                len(scan.orphan_data_keys),
                scan.orphan_data_keys[:5],
            )
        else:
            log.info("%s %s: no manifest yet", source.name, period)
        return None
    assembly = str(scan.assembly_id or "no-assembly")
    safe_assembly = path_segment(
        assembly
    )  # an executionId of "." or ".." named the period folder or its parent
    period_dir = (raw_root or subdir("raw")) / source.name / period
    paths, etags = _download(client, source.bucket, scan.data_keys, period_dir / safe_assembly)
    for old in period_dir.iterdir() if period_dir.exists() else []:
        if old.is_dir() and old.name != safe_assembly:  # older snapshots of this period: not needed
            shutil.rmtree(old, ignore_errors=True)
    fingerprint = f"{assembly}|" + ",".join(etags)
    log.info(
        "%s %s: manifest %s (assembly %s, %d file(s))",
        source.name,
        period,
        scan.manifest_key,
        assembly,
        len(paths),
    )
    return RawBatch(
        source=source.name,
        provider="aws",
        billing_period=period,
        files=paths,
        fingerprint=fingerprint,
        manifest_key=scan.manifest_key,
        assembly_id=assembly,
    )


def available_periods(source: AwsSource, *, client: Any | None = None) -> list[str]:
    """Billing periods that have a manifest (sorted), e.g. for backfills."""
    client = client or s3_client(source.conn_id)
    root = f"{source.prefix.strip('/')}/" if source.prefix.strip("/") else ""
    periods: set[str] = set()
    if source.format == "cur_legacy":
        for o in _list(client, source.bucket, root):
            m = re.search(r"/?([0-9]{4})([0-9]{2})01-[0-9]{8}/[^/]*-Manifest\.json$", o["Key"])
            if m:
                periods.add(f"{m.group(1)}-{m.group(2)}")
    else:
        for o in _list(client, source.bucket, f"{root}metadata/"):
            m = re.search(r"BILLING_PERIOD=([0-9]{4}-[0-9]{2})/", o["Key"])
            if m and o["Key"].endswith("Manifest.json"):
                periods.add(m.group(1))
    return sorted(periods)
