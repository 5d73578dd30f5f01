"""GCP billing export in BigQuery -> local raw parquet -> RawBatch (spine input).

Read through the Google provider's BigQueryHook (connection `conn_id`). One billing period
is one `invoice.month`, always extracted whole (the spine replaces the whole partition),
with bound query parameters only; the table name comes from validated config.

Late rows: GCP keeps appending rows for an invoice month for days after it closed
(`export_time`). A cheap probe (`COUNT(*)`, `MAX(export_time)` for the month) is the
delivery fingerprint: when late rows arrive the fingerprint changes and the month is
re-extracted and replaced; when nothing changed the spine records `unchanged`. Which
months are reloaded is the DAG's rolling window (current month + previous one early in a
month); `reload_days` bounds the scan: rows of invoice month M are read from
`export_time >= first day of M - reload_days` (lets BigQuery prune export-time partitions).

Results stream batch by batch into one parquet file (constant memory) under
FINOPS_HOME/raw/gcp/<source>/<period>/. Against real BigQuery the rows come through the
BigQuery Storage Read API (Arrow record batches over gRPC, several streams at once, the
connection's credentials); REST paging (`tabledata.list`, 50k rows a page) is kept for an
emulator only, which has no Storage Read API.

Connection extras honoured besides the provider's own: `api_endpoint` (a BigQuery
emulator) and `anonymous: true` (no credentials, emulator only).
"""

from __future__ import annotations

import hashlib
import logging
import re
from datetime import UTC, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finops.batch import RawBatch
from finops.paths import subdir
from finops.periods import parse_period, period_bounds
from finops.progress import Progress

if TYPE_CHECKING:
    from finops.config import GcpSource

log = logging.getLogger(__name__)
_IDENT = re.compile(r"^[A-Za-z0-9_\-]+$")
PAGE_SIZE = 50_000


def converter_for(src: GcpSource) -> Any:
    """detailed / standard: one converter (it fills what the standard table lacks); focus: Google's
    FOCUS export or the FOCUS BigQuery view over the detailed table."""
    if src.format in ("detailed", "standard"):
        from finops.focus.gcp_billing import CONVERTER, STANDARD

        return CONVERTER if src.format == "detailed" else STANDARD
    if src.format == "focus":
        from finops.focus.gcp_focus import CONVERTER as FOCUS

        return FOCUS
    raise ValueError(
        f"source {src.name}: GCP format {src.format!r} is not supported; set format: detailed (the "
        "resource-level usage cost table), standard (gcp_billing_export_v1_*) or focus (Google's FOCUS export "
        "or the FOCUS view)"
    )


def table_ref(src: GcpSource) -> str:
    """`project.dataset.table`, each part checked: identifiers cannot be bound parameters."""
    for part, value in (("project", src.project), ("dataset", src.dataset), ("table", src.table)):
        if not _IDENT.match(value or ""):
            raise ValueError(f"source {src.name}: {part} {value!r} is not a valid BigQuery identifier")
    return f"`{src.project}.{src.dataset}.{src.table}`"


def bq_client(conn_id: str, project: str | None = None):
    """A google.cloud.bigquery.Client from the Airflow connection (BigQueryHook)."""
    from airflow.providers.google.cloud.hooks.bigquery import BigQueryHook

    hook = BigQueryHook(gcp_conn_id=conn_id, use_legacy_sql=False)
    extras = hook.get_connection(conn_id).extra_dejson
    endpoint = extras.get("api_endpoint")
    if not endpoint:
        return hook.get_client(project_id=project) if project else hook.get_client()
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials, Credentials
    from google.cloud import bigquery

    creds: Credentials
    if extras.get("anonymous"):
        creds = AnonymousCredentials()
    else:
        creds = hook.get_credentials()
    return bigquery.Client(
        project=project or extras.get("project") or hook.project_id,
        credentials=creds,
        client_options=ClientOptions(api_endpoint=endpoint),
    )


def bqstorage_client(conn_id: str) -> Any | None:
    """A BigQueryReadClient for the extract's large results: the Storage Read API is what
    Google's client library itself picks for them (a month of a detailed export is millions of
    rows; REST pages are read one after another). Real BigQuery: the connection's credentials.
    An emulator (`api_endpoint` + `anonymous` in the extra): its gRPC `storage_api_endpoint`
    over a plaintext local channel, or None (REST pages) when it names none."""
    from airflow.sdk import BaseHook

    extra = BaseHook.get_connection(conn_id).extra_dejson
    from google.cloud import bigquery_storage

    if extra.get("api_endpoint"):
        endpoint = extra.get("storage_api_endpoint")
        if not endpoint or not extra.get("anonymous"):
            return None
        import grpc
        from google.cloud.bigquery_storage_v1.services.big_query_read.transports import (
            BigQueryReadGrpcTransport,
        )

        channel = grpc.insecure_channel(str(endpoint))  # loopback emulator only (anonymous)
        return bigquery_storage.BigQueryReadClient(transport=BigQueryReadGrpcTransport(channel=channel))

    from finops.connections import gcp_credentials

    creds, _ = gcp_credentials(conn_id)
    return bigquery_storage.BigQueryReadClient(credentials=creds)


def _queries(src: GcpSource, period: str) -> tuple[str, str, list[Any]]:
    from google.cloud import bigquery

    table = table_ref(src)
    start, end = period_bounds(period)
    if src.format == "focus":
        where = "BillingPeriodStart >= @period_start AND BillingPeriodStart < @period_end"
        params = [
            bigquery.ScalarQueryParameter("period_start", "TIMESTAMP", start.replace(tzinfo=UTC)),
            bigquery.ScalarQueryParameter("period_end", "TIMESTAMP", end.replace(tzinfo=UTC)),
        ]
        probe = f"SELECT COUNT(*) AS n, CAST(MAX(ChargePeriodEnd) AS STRING) AS mx FROM {table} WHERE {where}"
    else:
        y, m = parse_period(period)
        where = "invoice.month = @invoice_month AND export_time >= @scan_from"
        params = [
            bigquery.ScalarQueryParameter("invoice_month", "STRING", f"{y:04d}{m:02d}"),
            bigquery.ScalarQueryParameter(
                "scan_from", "TIMESTAMP", start.replace(tzinfo=UTC) - timedelta(days=src.reload_days)
            ),
        ]
        probe = f"SELECT COUNT(*) AS n, CAST(MAX(export_time) AS STRING) AS mx FROM {table} WHERE {where}"
    return probe, f"SELECT * FROM {table} WHERE {where}", params


def plan_batches(src: GcpSource, billing_period: str, *, record: bool = True) -> list[RawBatch]:
    """Extract one invoice month to local parquet; [] when BigQuery has no rows for it. `record`:
    the planners' shared protocol (False in a dry run); this one never writes to the warehouse."""
    from google.cloud import bigquery

    client = bq_client(src.conn_id, src.project)
    probe, select, params = _queries(src, billing_period)
    cfg = bigquery.QueryJobConfig(query_parameters=params, use_legacy_sql=False)
    row = next(iter(client.query(probe, job_config=cfg, location=src.location).result()))
    n, mx = int(row["n"]), row["mx"]
    if n == 0:
        log.info("%s %s: no rows in %s", src.name, billing_period, table_ref(src))
        return []
    fingerprint = f"{src.format}:{billing_period}:{n}:{mx}"
    digest = hashlib.sha256(fingerprint.encode()).hexdigest()[:16]
    out = subdir("raw") / "gcp" / src.name / billing_period / f"{digest}.parquet"
    progress = Progress(f"{src.name} {billing_period}: BigQuery extract", total=n)
    bqstorage = bqstorage_client(src.conn_id)
    try:
        rows = _stream_to_parquet(client, select, params, src.location, out, progress, bqstorage=bqstorage)
    finally:
        if bqstorage is not None:
            bqstorage.transport.close()  # its gRPC channel; one client per extract
    log.info(
        "%s %s: extracted %d rows (probe %d, max export %s) -> %s", src.name, billing_period, rows, n, mx, out
    )
    return [
        RawBatch(
            source=src.name,
            provider="gcp",
            billing_period=billing_period,
            files=[out],
            fingerprint=fingerprint,
            manifest_key=table_ref(src).strip("`"),
        )
    ]


def _stream_to_parquet(
    client: Any,
    sql: str,
    params: list[Any],
    location: str,
    out: Path,
    progress: Progress | None = None,
    bqstorage: Any | None = None,
) -> int:
    """Stream the query result into one parquet file (one row group per record batch): through
    the Storage Read API when `bqstorage` is given, else REST pages."""
    import pyarrow.parquet as pq
    from google.cloud import bigquery

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".part")
    job = client.query(sql, job_config=bigquery.QueryJobConfig(query_parameters=params), location=location)
    result = job.result(page_size=PAGE_SIZE)
    writer = None
    rows = 0
    try:
        for batch in result.to_arrow_iterable(bqstorage_client=bqstorage):
            if writer is None:
                writer = pq.ParquetWriter(tmp, batch.schema, compression="zstd")
            writer.write_batch(batch)
            rows += batch.num_rows
            if progress is not None:
                progress.add(batch.num_rows)
    finally:
        if writer is not None:
            writer.close()
    if writer is None:  # no pages at all: write an empty file with the result's schema
        pq.write_table(result.to_arrow(bqstorage_client=bqstorage, create_bqstorage_client=False), tmp)
    tmp.replace(out)
    return rows
