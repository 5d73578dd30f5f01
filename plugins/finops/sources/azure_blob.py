"""Azure Cost Management exports in Blob Storage -> local raw files -> RawBatch.

Read through the Azure provider's WasbHook (connection `conn_id`). Config `prefix` is the
export's root folder (`<prefix>/<exportName>` as the export was set up). Layout written
by Cost Management:

    <container>/<root>/<YYYYMMDD-YYYYMMDD>/<runId>/manifest.json      (exports 2023-07+)
    <container>/<root>/<YYYYMMDD-YYYYMMDD>/<runId>/part_0_0001.csv.gz ...
    <container>/<root>/<YYYYMMDD-YYYYMMDD>/<name>_<guid>.csv           (older, no run folder:
                                                                        one more file per run)

Month-to-date exports are rewritten many times a month, each run a complete snapshot of
the month so far: only the NEWEST run of the period counts (by the manifest's
runInfo.submittedTime, else by the newest blob), and it replaces the whole partition.
With a manifest, exactly the blobs it lists are loaded (a missing one is an error: the
run is incomplete, try again later); a manifest reporting 0 data rows is treated as "no
data yet" and loads nothing, so an empty export never wipes a loaded month. Cost Management
writes a run's manifest after its data (Microsoft's FinOps hubs start ingesting on it): a
run folder holding data but no manifest yet is still being written and is passed over for
the newest complete run, so a half-uploaded run never replaces the month.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from finops.batch import RawBatch
from finops.paths import path_segment, subdir
from finops.periods import period_bounds
from finops.progress import Progress
from finops.sources import DeliveryError

if TYPE_CHECKING:
    from finops.config import AzureSource

log = logging.getLogger(__name__)
DATA_SUFFIXES = (".csv", ".csv.gz", ".gz", ".parquet", ".snappy.parquet")


class IncompleteExportError(DeliveryError):
    """A manifest lists blobs that are not (yet) there."""


@dataclass
class ExportRun:
    folder: str  # blob prefix of the run
    run_id: str
    submitted: str  # sortable text: manifest submittedTime or newest blob time
    blobs: list[str] = field(default_factory=list)
    etags: dict[str, str] = field(default_factory=dict)
    manifest: dict[str, Any] | None = None
    legacy: bool = False  # older layout: one data file directly in the period folder, no manifest


def converter_for(src: AzureSource) -> Any:
    """The source's converter: its export format, and its configured agreement (and currency, for
    the one schema without a currency column) -- they decide billing account and invoice id."""
    from finops.focus.azure_cost import AzureCostConverter
    from finops.focus.azure_focus import AzureFocusConverter

    if src.format == "focus":
        return AzureFocusConverter(agreement=src.agreement)
    return AzureCostConverter(src.format, agreement=src.agreement, currency=src.currency)


def period_folder(root: str, period: str) -> str:
    start, end = period_bounds(period)
    last = end.toordinal() - 1
    last_day = datetime.fromordinal(last)
    folder = f"{start:%Y%m%d}-{last_day:%Y%m%d}"
    return f"{root.strip('/')}/{folder}/" if root.strip("/") else f"{folder}/"


def list_runs(blobs: list[tuple[str, str, datetime]], folder: str) -> list[ExportRun]:
    """Group (name, etag, last_modified) listings under a period folder into export runs (pure).

    A run folder is one run. A data file directly in the period folder is the older layout,
    where every run wrote one more `<name>_<guid>.csv` beside the earlier ones, each a complete
    month-to-date snapshot: each such file is a run of its own, so only the newest counts (taking
    them all would add every earlier day's snapshot to the month)."""
    runs: dict[str, ExportRun] = {}
    for name, etag, modified in blobs:
        rel = name[len(folder) :]
        parts = rel.split("/")
        legacy = len(parts) == 1
        if legacy and not name.lower().endswith(DATA_SUFFIXES):
            continue  # a stray note or manifest beside the older layout's files: no run of its own
        run_key = rel if legacy else parts[0]
        run = runs.setdefault(
            run_key,
            ExportRun(
                folder=folder if legacy else f"{folder}{run_key}/",
                run_id=run_key,
                submitted="",
                legacy=legacy,
            ),
        )
        stamp = modified.strftime("%Y-%m-%dT%H:%M:%S.%f")
        run.submitted = max(run.submitted, stamp)
        if name.endswith("manifest.json"):
            run.etags[name] = etag
            continue
        if name.lower().endswith(DATA_SUFFIXES):
            run.blobs.append(name)
            run.etags[name] = etag
    return [r for r in runs.values() if r.blobs or r.etags]


def newest_run(runs: list[ExportRun]) -> ExportRun | None:
    return max(runs, key=lambda r: (r.submitted, r.run_id), default=None)


def _apply_manifest(run: ExportRun, manifest: dict[str, Any]) -> None:
    run.manifest = manifest
    info = manifest.get("runInfo") or {}
    if info.get("submittedTime"):
        run.submitted = str(info["submittedTime"])
    listed = [b["blobName"] for b in manifest.get("blobs") or []]
    missing = [b for b in listed if b not in run.etags]
    if missing:
        raise IncompleteExportError(f"export run {run.folder}: manifest lists missing blob(s) {missing[:3]}")
    run.blobs = listed


def plan_batches(src: AzureSource, billing_period: str, *, record: bool = True) -> list[RawBatch]:
    # record: the planners' shared protocol (False in a dry run); this one never writes to the warehouse
    from airflow.providers.microsoft.azure.hooks.wasb import WasbHook

    hook = WasbHook(wasb_conn_id=src.conn_id)
    container = hook.get_conn().get_container_client(src.container)  # the sync client
    folder = period_folder(src.prefix, billing_period)
    listing = [(b.name, b.etag, b.last_modified) for b in container.list_blobs(name_starts_with=folder)]
    runs = list_runs(listing, folder)
    for each in runs:  # manifests decide submitted time and blob list
        mkey = next((k for k in each.etags if k.endswith("manifest.json")), None)
        if mkey:
            _apply_manifest(each, json.loads(container.download_blob(mkey).readall()))
    complete = [r for r in runs if r.legacy or r.manifest is not None]
    for r in runs:
        if not r.legacy and r.manifest is None:
            log.warning(
                "%s %s: export run %s has no manifest yet (still being written); skipped",
                src.name,
                billing_period,
                r.folder,
            )
    run = newest_run(complete)
    if run is None or not run.blobs:
        log.info("%s %s: no export run under %s/%s", src.name, billing_period, src.container, folder)
        return []
    if run.manifest is not None and int(run.manifest.get("dataRowCount", 1) or 0) == 0:
        log.warning(
            "%s %s: newest export run %s reports 0 rows; nothing loaded", src.name, billing_period, run.run_id
        )
        return []
    digest = hashlib.sha256(
        json.dumps(sorted((b, run.etags.get(b, "")) for b in run.blobs)).encode()
    ).hexdigest()[:16]
    target = subdir("raw") / "azure" / src.name / billing_period / path_segment(f"{run.run_id}-{digest}")
    files = [_download(container, b, target) for b in sorted(run.blobs)]
    log.info(
        "%s %s: newest of %d run(s) is %s (%d file(s))",
        src.name,
        billing_period,
        len(runs),
        run.folder,
        len(files),
    )
    return [
        RawBatch(
            source=src.name,
            provider="azure",
            billing_period=billing_period,
            files=files,
            fingerprint=f"{run.folder}:{digest}",
            # the manifest's own name: manifest.json (2023-07+) or _manifest.json (partitioned exports before)
            manifest_key=next((k for k in run.etags if k.endswith("manifest.json")), None)
            if run.manifest
            else None,
            assembly_id=run.run_id,
        )
    ]


def _download(container: Any, blob: str, target: Path) -> Path:
    """Stream one blob to disk (constant memory), keeping its name and compression suffix."""
    target.mkdir(parents=True, exist_ok=True)
    out = target / path_segment(PurePosixPath(blob).name)  # a blob named 'x/..' has the name '..'
    tmp = out.with_name(out.name + ".part")
    progress = Progress(f"download blob {blob}", unit="bytes")

    def hook(done: int, total: int | None) -> None:
        progress.total = total or None
        progress.set(done)

    with open(tmp, "wb") as fh:
        container.download_blob(blob, progress_hook=hook).readinto(fh)
    tmp.replace(out)
    return out
