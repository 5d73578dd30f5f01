"""Benchmark results -> warehouse: `gpu_benchmark_runs` (one row per launch, failures too),
`gpu_benchmarks` (one row per metric) and `gpu_serving_benchmarks` (serving_store.py). Re-storing
a bench_run_id replaces its rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from finops.gpubench import serving_store
from finops.gpubench.schema import validate
from finops.warehouse.base import Warehouse

_METRIC_COLS = (
    "bench_run_id",
    "provider",
    "region",
    "instance_type",
    "pricing_model",
    "gpu_model",
    "gpu_count",
    "metric",
    "dtype",
    "value",
    "unit",
    "section",
    "details",
    "measured_at",
)
_RUN_COLS = (
    "bench_run_id",
    "dag_run_id",
    "provider",
    "region",
    "instance_type",
    "pricing_model",
    "status",
    "instance_ids",
    "results_uri",
    "gpu_model",
    "gpu_count",
    "schema_version",
    "profile",
    "errors",
    "raw",
    "launched_at",
    "measured_at",
    "finished_at",
)


def _naive(ts: str | datetime | None) -> datetime | None:
    if ts is None:
        return None
    dt = datetime.fromisoformat(ts) if isinstance(ts, str) else ts
    return dt.astimezone(UTC).replace(tzinfo=None) if dt.tzinfo else dt


def _insert(wh: Warehouse, table: str, cols: Sequence[str], row: dict[str, Any]) -> None:
    wh.execute(
        f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
        [row.get(c) for c in cols],
    )


def record_run(
    wh: Warehouse,
    *,
    bench_run_id: str,
    dag_run_id: str | None,
    target: dict[str, Any],
    status: str,
    instance_ids: list[str] | None = None,
    results_uri: str | None = None,
    errors: list[str] | None = None,
    doc: dict[str, Any] | None = None,
    launched_at: datetime | None = None,
) -> None:
    """Write (replace) the run row. status: ok | failed | timeout | dry_run."""
    dev = (doc or {}).get("device", {})
    row = {
        "bench_run_id": bench_run_id,
        "dag_run_id": dag_run_id,
        "provider": target["provider"],
        "region": target["region"],
        "instance_type": target["instance_type"],
        "pricing_model": target["pricing_model"],
        "status": status,
        "instance_ids": json.dumps(instance_ids or []),
        "results_uri": results_uri,
        "gpu_model": dev.get("name") or target.get("gpu_model"),
        "gpu_count": dev.get("count") or target.get("gpu_count"),
        "schema_version": (doc or {}).get("schema_version"),
        "profile": (doc or {}).get("profile"),
        "errors": json.dumps(errors or []),
        "raw": json.dumps(doc) if doc is not None else None,
        "launched_at": _naive(launched_at),
        "measured_at": _naive((doc or {}).get("finished_at")),
        "finished_at": datetime.now(UTC).replace(tzinfo=None),
    }
    wh.execute("DELETE FROM gpu_benchmark_runs WHERE bench_run_id = ?", [bench_run_id])
    _insert(wh, "gpu_benchmark_runs", _RUN_COLS, row)


def store_result(
    wh: Warehouse,
    *,
    bench_run_id: str,
    dag_run_id: str | None,
    target: dict[str, Any],
    doc: dict[str, Any],
    instance_ids: list[str] | None = None,
    results_uri: str | None = None,
    launched_at: datetime | None = None,
) -> int:
    """Validate the document and store it: the run row plus one row per metric. Returns metric rows."""
    validate(doc)
    dev = doc["device"]
    measured_at = _naive(doc["finished_at"])
    gpu_model = dev.get("name") or target.get("gpu_model")
    gpu_count = int(dev.get("count") or target.get("gpu_count") or 1)
    # one transaction: an error part-way (a value no column holds) must not leave some of the
    # metrics, or delete the stored ones; latest_rows reads gpu_benchmarks whatever the status
    wh.execute("BEGIN")
    try:
        wh.execute("DELETE FROM gpu_benchmarks WHERE bench_run_id = ?", [bench_run_id])
        for m in doc["results"]:
            _insert(
                wh,
                "gpu_benchmarks",
                _METRIC_COLS,
                {
                    "bench_run_id": bench_run_id,
                    "provider": target["provider"],
                    "region": target["region"],
                    "instance_type": target["instance_type"],
                    "pricing_model": target["pricing_model"],
                    "gpu_model": gpu_model,
                    "gpu_count": gpu_count,
                    "metric": m["metric"],
                    "dtype": m["dtype"],
                    "value": float(m["value"]),
                    "unit": m["unit"],
                    "section": m.get("section"),
                    "details": json.dumps(m.get("details") or {}),
                    "measured_at": measured_at,
                },
            )
        serving_store.store_serving(
            wh,
            bench_run_id=bench_run_id,
            target=target,
            doc=doc,
            measured_at=measured_at,
            gpu_model=gpu_model,
            gpu_count=gpu_count,
        )
        failed = [f"{k}: {s.get('error')}" for k, s in doc["sections"].items() if s["status"] == "error"]
        record_run(
            wh,
            bench_run_id=bench_run_id,
            dag_run_id=dag_run_id,
            target=target,
            status="ok",
            doc=doc,
            instance_ids=instance_ids,
            results_uri=results_uri,
            errors=failed,
            launched_at=launched_at,
        )
    except BaseException:
        wh.execute("ROLLBACK")
        raise
    wh.execute("COMMIT")
    return len(doc["results"])


def latest_rows(wh: Warehouse) -> list[dict[str, Any]]:
    """Newest figure per (provider, region, instance type, metric, dtype), as dicts for pricing.

    Smoke-test runs (the quick profile: one 4096^3 matmul, a 4-layer d512 model) are left out by
    the gpu_benchmarks_latest view (migration 301): their step time is another model's, so a quick
    run must never replace the full figures that $/1k steps and $/TFLOP-h compare."""
    cols = (
        "provider",
        "region",
        "instance_type",
        "pricing_model",
        "gpu_model",
        "gpu_count",
        "metric",
        "dtype",
        "value",
        "unit",
        "measured_at",
    )
    rows = wh.query(  # a fixed order: tables, charts and comparisons of two reads stay stable
        f"SELECT {', '.join(cols)} FROM gpu_benchmarks_latest "
        "ORDER BY provider, region, instance_type, metric, COALESCE(dtype, '')"
    )
    return [dict(zip(cols, r, strict=True)) for r in rows]
