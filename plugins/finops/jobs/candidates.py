"""Planner candidates from what the project measures: `finops.gpubench.pricing` offers (benchmark
step times joined with instance prices and spot interruption rates, see `offers_for`) plus GPU
memory per model from the catalog. `candidates_from_offers` is pure; `candidates_from_warehouse`
is the edge that reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from decimal import Decimal

from finops.gpubench.pricing import Offer
from finops.jobs.planner import Candidate
from finops.warehouse.base import Warehouse


def candidates_from_offers(
    offers: Iterable[Offer], gpu_memory_gib: Mapping[str, float] | None = None
) -> list[Candidate]:
    """One Candidate per offer. Prices arrive as floats from the estimate layer; `repr` gives
    the shortest decimal that round-trips, i.e. the price as the provider published it.
    GPU memory is looked up by model name, case-insensitively; unknown stays None (the planner
    then rejects the offer for any job that states a memory need)."""
    memory = {k.lower(): v for k, v in (gpu_memory_gib or {}).items()}
    return [
        Candidate(
            provider=o.provider,
            region=o.region,
            instance_type=o.instance_type,
            pricing_model=o.pricing_model,
            price_per_hour=Decimal(repr(float(o.price_per_hour))),
            gpu_count=o.gpu_count,
            gpu_model=o.gpu_model,
            gpu_memory_gib=memory.get(o.gpu_model.lower()) if o.gpu_model else None,
            step_ms=dict(o.step_ms),
            interruption_rate_per_h=o.interruption_rate_per_h,
        )
        for o in offers
    ]


def candidates_from_warehouse(wh: Warehouse, currency: str = "USD") -> list[Candidate]:
    """The planner's candidates from what the project measured and priced: the newest benchmark
    step times per instance type (`gpu_benchmarks`) joined with the newest Linux prices
    (`latest_prices`, in `currency` only: a candidate has no currency of its own), and GPU memory
    per GPU from `instance_catalog` for that instance type, else the static catalog. Spot
    interruption rates are not derived yet: spot candidates get the planner's default rate."""
    from finops.gpubench import pricing, store
    from finops.gpubench.report import latest_prices
    from finops.prices.gpu_models import known_instance

    measured = pricing.measured_from_rows(store.latest_rows(wh))
    prices = [p for p in latest_prices(wh) if p.currency == currency]
    try:
        rows = wh.query(
            "SELECT provider, instance_type, MAX(gpu_memory_gib) FROM instance_catalog "
            "WHERE gpu_memory_gib IS NOT NULL GROUP BY provider, instance_type"
        )
    except Exception:  # noqa: BLE001 - no catalog yet: the static table still answers
        rows = []
    memory = {(str(p), str(t)): float(g) for p, t, g in rows}
    out = []
    for c in candidates_from_offers(pricing.offers_for(measured, prices)):
        mem = memory.get((c.provider, c.instance_type))
        if mem is None and (spec := known_instance(c.provider, c.instance_type)) is not None:
            mem = spec.gpu_memory_gib
        out.append(replace(c, gpu_memory_gib=None if mem is None else float(mem)))
    return out
