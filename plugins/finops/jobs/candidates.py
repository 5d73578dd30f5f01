"""Planner candidates from what the project measures: `finops.gpubench.pricing` offers (benchmark
step times joined with instance prices and spot interruption rates, see `offers_for`) plus GPU
memory per model from the catalog. Pure: the edge reads the warehouse and passes plain values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

from finops.gpubench.pricing import Offer
from finops.jobs.planner import Candidate


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
