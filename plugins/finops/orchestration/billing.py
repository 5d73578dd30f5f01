"""What the billing DAG tasks do, for every provider (no Airflow imports: testable directly).

plan_loads:      Params + config -> the (source, billing period) pairs to load
load_partition:  extract the newest delivery of one pair, convert to FOCUS, validate, and
                 replace that partition in one transaction (or quarantine it), then rebuild
                 that partition's UI rollups
"""

from __future__ import annotations

import logging
from datetime import date
from functools import partial
from pathlib import Path
from typing import Any

from finops.config import ConfigError, FinOpsConfig, get_config
from finops.periods import resolve_periods
from finops.sources import DeliveryError

log = logging.getLogger(__name__)

PROVIDER_SECTIONS = {"aws": "aws", "gcp": "gcp", "azure": "azure", "lambda": "lambda_cloud"}


def sources_of(cfg: FinOpsConfig, provider: str) -> list[Any]:
    return [s for s in getattr(cfg.sources, PROVIDER_SECTIONS[provider]) if s.enabled]


def plan_loads(
    provider: str, source: str | None, billing_period: str | list[str] | None, today: date
) -> list[dict]:
    cfg = get_config()
    srcs = sources_of(cfg, provider)
    if source and source != "all":
        picked = [s for s in srcs if s.name == source]
        if not picked:
            known = ", ".join(s.name for s in srcs) or "(none)"
            raise ConfigError(f"source {source!r} is not a configured {provider} source; configured: {known}")
        srcs = picked
    periods = resolve_periods(billing_period, today)
    plan = [{"provider": provider, "source": s.name, "billing_period": p} for s in srcs for p in periods]
    log.info(
        "planned %d %s loads: %s", len(plan), provider, [f"{x['source']}/{x['billing_period']}" for x in plan]
    )
    return plan


def _record_refused_delivery(cfg: FinOpsConfig, item: dict, error: Exception, run_id: str | None) -> None:
    """A delivery refused before conversion still leaves a `load_log` row (status failed, the
    reason) and an alert: the month's history shows why nothing changed, the data loaded stays."""
    import uuid

    from finops.alerts.events import AlertEvent, emit
    from finops.warehouse import connect
    from finops.warehouse.base import LoadLogEntry

    message = f"delivery refused: {error}"[:2000]
    entry = LoadLogEntry(
        load_id=f"refused-{uuid.uuid4().hex[:16]}",
        source=item["source"],
        provider=item["provider"],
        billing_period=item["billing_period"],
        status="failed",
        message=message,
        run_id=run_id,
    )
    try:
        wh = connect(cfg)
        try:
            wh.append_log(entry)
        finally:
            wh.close()
    except Exception:  # noqa: BLE001 - the delivery error is what the task must report
        log.exception("could not record the refused delivery in load_log")
    emit(
        AlertEvent(
            kind="delivery_refused",
            severity="critical",
            title=f"Billing delivery refused: {item['source']} {item['billing_period']}",
            summary=message[:1000],
            facts={k: item[k] for k in ("provider", "source", "billing_period")},
            dedup_key=f"delivery:{item['source']}:{item['billing_period']}:{message[:200]}",
        )
    )


def load_partition(item: dict, *, dry_run: bool = False, run_id: str | None = None) -> dict:
    """Extract -> FOCUS -> validate -> replace one (source, period). Returns a JSON-able summary."""
    from finops import ingest
    from finops.commitments.inventory import then_record_end_dates
    from finops.sources import registry
    from finops.warehouse import connect

    cfg = get_config()
    src = cfg.source(item["source"])
    provider, period = item["provider"], item["billing_period"]
    try:
        batches = registry.plan_batches(provider, src, period, dry_run=dry_run)
    except DeliveryError as e:
        if not dry_run:
            _record_refused_delivery(cfg, item, e, run_id)
        raise
    if not batches:
        log.warning(
            "%s %s: no complete delivery found for %s (nothing loaded, nothing removed)",
            provider,
            src.name,
            period,
        )
        return {**item, "status": "no_data", "rows": 0}
    converter = registry.converter_for(provider, src)
    results = []
    for batch in batches:
        log.info(
            "%s/%s: loading %d file(s), delivery %s", src.name, period, len(batch.files), batch.fingerprint
        )
        if dry_run:
            results.append({**item, **dry_run_batch(batch, converter)})
            continue
        wh = connect(cfg)
        try:
            rollups = partial(refresh_rollups, wh, batch.source, batch.billing_period)
            # commitment end dates ride in the raw CUR only (finops.commitments.inventory)
            after = partial(then_record_end_dates, rollups, wh, batch.provider, batch.files)
            entry = ingest.load_batch(wh, batch, converter, run_id=run_id, after_load=after)
        finally:
            wh.close()
        results.append(
            {
                **item,
                "status": entry.status,
                "rows": entry.row_count,
                "load_id": entry.load_id,
                "billed_total": str(entry.focus_billed_total)
                if entry.focus_billed_total is not None
                else None,
                "currency": entry.currency,
                "message": entry.message,
            }
        )
    return results[-1] if len(results) == 1 else {**item, "status": results[-1]["status"], "parts": results}


def refresh_rollups(wh: Any, source: str, period: str, staged: list[Path] | None = None) -> int | None:
    """Rebuild the UI rollups of the partition just loaded, here in its mapped task: partitions
    refresh in parallel and as soon as they load, instead of one after another in
    publish_summary (60 s for a 10M-row month on PostgreSQL, bench/celery_vs_dagtest.py).
    `staged`: the staging files the load copied in (PostgreSQL); the rollups are then summed
    from them by DuckDB instead of re-reading the partition from the warehouse.
    Derived data: a failure is logged, not raised; publish_summary's `refresh_stale` retries it
    and the pages read a stale partition from focus_costs meanwhile. Returns daily rollup rows."""
    import time

    from finops.ui.rollup import refresh_partition

    t = time.perf_counter()
    try:
        n = refresh_partition(wh, source, period, rows_from=staged)
    except Exception:  # noqa: BLE001 - see docstring
        log.exception("%s %s: UI rollup refresh failed; publish_summary will retry it", source, period)
        return None
    how = "from the staging files" if staged else "from the warehouse"
    log.info(
        "%s %s: UI rollups rebuilt %s (%d daily rows) in %.1f s",
        source,
        period,
        how,
        n,
        time.perf_counter() - t,
    )
    return n


def dry_run_batch(batch: Any, converter: Any) -> dict:
    """Convert and validate one delivery exactly as a load would, writing nothing to the
    warehouse (the staging file is removed). What an ad-hoc audit of a new export wants."""
    from finops import ingest
    from finops.paths import subdir

    load_id = ingest.make_load_id(batch.source, batch.billing_period, batch.fingerprint)
    ctx = ingest.ConvertContext(batch.source, batch.provider, batch.billing_period, load_id)
    staging = subdir("staging") / batch.source / batch.billing_period / f"dryrun-{load_id}.parquet"
    try:
        try:
            res = ingest.convert_to_staging(batch, converter, ctx, staging)
        except ingest.ConversionError as e:
            return {"status": "dry_run", "valid": False, "failures": [str(e)], "rows": 0}
        report, failures = ingest.check_staging(batch, res)
        failures = [*failures, *ingest.dry_run_refusals(batch, res.row_count)]
        return {
            "status": "dry_run",
            "valid": report.success and not failures,
            "failures": failures,
            "rows": res.row_count,
            "billed_total": str(res.focus_billed_total),
            "raw_billed_total": str(res.raw_billed_total),
            "currency": ",".join(res.currencies),
            **ingest.notes_summary(res.notes),
        }
    finally:
        staging.unlink(missing_ok=True)
