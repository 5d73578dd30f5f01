"""Serving benchmark figures <-> warehouse (gpu_serving_benchmarks, migration 302), and the
serving cost matrix and fleet advice read from it with the latest prices (Decimal kept).

store.store_result calls `store_serving` inside its transaction, so a run's serving rows are
replaced, or kept, together with its other figures."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from finops.gpubench import fleet, latency, serving_cost
from finops.warehouse.base import Warehouse

_COLS = (
    "bench_run_id",
    "provider",
    "region",
    "instance_type",
    "pricing_model",
    "gpu_model",
    "gpu_count",
    "profile",
    "model",
    "dtype",
    "batch",
    "tokens_in",
    "tokens_out",
    "requests_per_s",
    "output_tokens_per_s",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "peak_memory_bytes",
    "samples",
    "p99_target_ms",
    "model_config",
    "measured_at",
)
_READ = (
    "provider",
    "region",
    "instance_type",
    "gpu_model",
    "gpu_count",
    "model",
    "dtype",
    "batch",
    "tokens_in",
    "tokens_out",
    "requests_per_s",
    "output_tokens_per_s",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "peak_memory_bytes",
    "samples",
    "p99_target_ms",
    "measured_at",
)


def store_serving(
    wh: Warehouse,
    *,
    bench_run_id: str,
    target: Mapping[str, Any],
    doc: Mapping[str, Any],
    measured_at: datetime | None,
    gpu_model: str | None,
    gpu_count: int,
) -> int:
    """Replace the serving rows of `bench_run_id` with the document's (none when it has no
    `serving` key). The caller holds the transaction and has validated the document."""
    wh.execute("DELETE FROM gpu_serving_benchmarks WHERE bench_run_id = ?", [bench_run_id])
    sv = doc.get("serving") or {}
    targets = sv.get("p99_target_ms") or {}
    models = sv.get("models") or {}
    n = 0
    for r in sv.get("rows", []):
        row = {
            "bench_run_id": bench_run_id,
            "provider": target["provider"],
            "region": target["region"],
            "instance_type": target["instance_type"],
            "pricing_model": target["pricing_model"],
            "gpu_model": gpu_model,
            "gpu_count": gpu_count,
            "profile": doc["profile"],
            "model_config": json.dumps(models.get(r["model"]) or {}),
            "measured_at": measured_at,
            "p99_target_ms": float(targets[r["model"]]),
        }
        row.update({c: r.get(c) for c in _COLS if c not in row})
        wh.execute(
            f"INSERT INTO gpu_serving_benchmarks ({', '.join(_COLS)}) VALUES ({', '.join('?' for _ in _COLS)})",
            [row[c] for c in _COLS],
        )
        n += 1
    return n


def latest_rows(wh: Warehouse) -> list[dict[str, Any]]:
    """gpu_serving_latest as dicts, in a fixed order (provider, type, model, dtype, batch)."""
    rows = wh.query(
        f"SELECT {', '.join(_READ)} FROM gpu_serving_latest "
        "ORDER BY provider, instance_type, model, dtype, batch"
    )
    return [dict(zip(_READ, r, strict=True)) for r in rows]


def figures(
    rows: Iterable[Mapping[str, Any]], p99_target_ms: Mapping[str, float] | None = None
) -> list[serving_cost.ServingFigure]:
    """Per (provider, type, model, dtype): the best batch under the P99 target, from stored
    points. `p99_target_ms` (model -> ms) replaces the target the run was measured with, so a
    reader can ask for a tighter or looser SLA without a new benchmark."""
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["provider"], r["instance_type"], r["model"], r["dtype"]), []).append(dict(r))
    out = []
    for (prov, it, model, dtype), pts in sorted(groups.items()):
        target = float((p99_target_ms or {}).get(model) or pts[0]["p99_target_ms"])
        pick = latency.best_under_target([p for p in pts if p["requests_per_s"] is not None], target)
        first = pts[0]
        measured = max(str(p["measured_at"]) for p in pts)
        out.append(
            serving_cost.ServingFigure(
                prov,
                it,
                first["gpu_model"],
                int(first["gpu_count"] or 1),
                model,
                dtype,
                target,
                pick["batch"] if pick else None,
                pick["requests_per_s"] if pick else None,
                pick["output_tokens_per_s"] if pick else None,
                pick["p99_ms"] if pick else None,
                measured,
            )
        )
    return out


def latest_price_offers(wh: Warehouse) -> list[serving_cost.PriceOffer]:
    """Cheapest-zone latest Linux price per (provider, region, type, pricing model), exact.
    None when the price tables do not exist yet (the caller says so)."""
    rows = wh.query(
        "SELECT provider, region, instance_type, pricing_model, price_per_hour, currency "
        "FROM latest_prices WHERE os = ? ORDER BY provider, region, instance_type, pricing_model",
        ["linux"],
    )
    return serving_cost.offers_from_rows(rows)


def matrix(
    wh: Warehouse,
    p99_target_ms: Mapping[str, float] | None = None,
    extra_prices: Iterable[serving_cost.PriceOffer] = (),
) -> dict[str, Any]:
    """serving_cost.cost_matrix of the latest serving figures x the latest prices (plus
    `extra_prices` for keys the price tables lack, e.g. a target's configured price)."""
    figs = figures(latest_rows(wh), p99_target_ms)
    prices = {(p.provider, p.region, p.instance_type, p.pricing_model): p for p in extra_prices}
    prices.update(
        {(p.provider, p.region, p.instance_type, p.pricing_model): p for p in latest_price_offers(wh)}
    )
    return serving_cost.cost_matrix(figs, prices.values())


def advise(
    matrix_rows: list[dict[str, Any]],
    model: str,
    traffic: fleet.Traffic,
    *,
    dtypes: Iterable[str] | None = None,
    currency: str = "USD",
    allow_spot: bool = True,
    same_region: bool = True,
) -> fleet.FleetPlan:
    """fleet.plan_fleet over the matrix rows of `model` priced in `currency`."""
    rows = [r for r in matrix_rows if r["currency"] == currency]
    return fleet.plan_fleet(
        traffic, fleet.capacity_offers(rows, model, dtypes), allow_spot=allow_spot, same_region=same_region
    )


def jsonable(v: Any) -> Any:
    """Decimals as strings (exact), for JSON answers."""
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [jsonable(x) for x in v]
    return v


def report_rows(wh: Warehouse, per_model: int = 3) -> list[dict[str, Any]]:
    """The monthly report's inference section: per model, the `per_model` cheapest offers ($ per
    1,000 requests at the P99 target each run was measured with), as display strings. Empty when
    there are no serving figures or price tables yet."""
    if not (wh.table_exists("gpu_serving_benchmarks") and wh.table_exists("latest_prices")):
        return []
    out: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for r in matrix(wh)["rows"]:  # cheapest first within a model
        if r["usd_per_1k_requests"] is None or counts.get(r["model"], 0) >= per_model:
            continue
        counts[r["model"]] = counts.get(r["model"], 0) + 1
        out.append(
            {
                "model": r["model"],
                "dtype": r["dtype"],
                "batch": r["batch"],
                "p99_target_ms": r["p99_target_ms"],
                "offer": f"{r['provider']} {r['region']} {r['instance_type']} {r['pricing_model']}",
                "currency": r["currency"],
                "per_1k_requests": str(r["usd_per_1k_requests"]),
                "per_1m_output_tokens": ""
                if r["usd_per_1m_output_tokens"] is None
                else str(r["usd_per_1m_output_tokens"]),
            }
        )
    return out
