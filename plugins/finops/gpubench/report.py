"""Benchmark figures joined with the latest prices from the warehouse (price tables of the
prices feature, migration 100), falling back to `price_per_hour` in the target config when
the price tables are missing or hold nothing for an instance type."""

from __future__ import annotations

import logging
from typing import Any

from finops.gpubench import pricing, store
from finops.gpubench.settings import BenchSettings
from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)


def latest_prices(wh: Warehouse, settings: BenchSettings | None = None) -> list[pricing.Price]:
    """Cheapest-zone latest Linux price per (provider, region, instance type, pricing model)."""
    found: dict[tuple[str, str, str, str], pricing.Price] = {}
    try:
        rows = wh.query(
            "SELECT provider, region, instance_type, pricing_model, price_per_hour, currency "
            "FROM latest_prices WHERE os = ?",
            ["linux"],
        )
    except Exception as e:  # noqa: BLE001 - no price tables yet: the config fallback still works
        log.info("no latest_prices view (%s): using configured fallback prices only", e)
        rows = []
    for prov, region, it, model, price, cur in rows:
        found[(prov, region, it, model)] = pricing.Price(prov, region, it, model, float(price), cur)
    for t in settings.targets if settings else []:
        key = (t.provider, t.region, t.instance_type, t.pricing_model)
        if key not in found and t.price_per_hour is not None:
            found[key] = pricing.Price(*key, t.price_per_hour)
    return list(found.values())


def price_performance(wh: Warehouse, settings: BenchSettings | None = None) -> list[dict[str, Any]]:
    """$ / TFLOP-hour per dtype, $ / 1k steps per precision, AMP and spot savings per instance."""
    measured = pricing.measured_from_rows(store.latest_rows(wh))
    return pricing.price_performance(measured, latest_prices(wh, settings))


def failed_runs(wh: Warehouse, dag_run_id: str) -> list[tuple[str, str, str]]:
    """(bench_run_id, status, errors) of this DAG run's benchmarks that did not succeed."""
    return [
        tuple(r)
        for r in wh.query(
            "SELECT bench_run_id, status, CAST(errors AS VARCHAR) FROM gpu_benchmark_runs "
            "WHERE dag_run_id = ? AND status IN ('failed', 'timeout') ORDER BY bench_run_id",
            [dag_run_id],
        )
    ]
