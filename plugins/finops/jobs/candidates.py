"""Planner candidates from what the project measures: `finops.gpubench.pricing` offers (benchmark
step times joined with instance prices and spot interruption rates, see `offers_for`) plus GPU
memory per model from the catalog, and spot interruption rates from placement scores and price
history (`finops.jobs.interruptions`). `candidates_from_offers` is pure; `candidates_from_warehouse`
is the edge that reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from decimal import Decimal

from finops.gpubench.pricing import Offer
from finops.jobs.interruptions import Rate, RateSettings, Score, SpotPoint, interruption_rates
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


def rates_from_warehouse(
    wh: Warehouse,
    places: Iterable[tuple[str, str, str]],
    settings: RateSettings | None = None,
    days: int = 14,
) -> dict[tuple[str, str, str], Rate]:
    """Spot interruption rates for (provider, region, instance type) places from the stored
    AWS Spot Placement Scores and the last `days` of spot price history
    (`finops.jobs.interruptions`)."""
    from finops.prices.queries import spot_placement_risk, spot_price_history
    from finops.prices.records import utcnow

    wanted = set(places)
    scores: list[Score] = []
    history: list[SpotPoint] = []
    for provider, itype in sorted({(p, t) for p, _, t in wanted}):
        regions = {r for p, r, t in wanted if (p, t) == (provider, itype)}
        if provider == "aws":
            scores += [Score("aws", s.region, s.zone_id, itype, s.score, s.observed_at)
                       for s in spot_placement_risk(wh, itype) if s.region in regions]  # fmt: skip
        history += [SpotPoint(provider, h.region, h.zone, itype, h.price_per_hour, h.observed_at)
                    for h in spot_price_history(wh, provider, itype, days=days) if h.region in regions]  # fmt: skip
    return interruption_rates(scores, history, utcnow(), settings)


def candidates_from_warehouse(
    wh: Warehouse, currency: str = "USD", rate_settings: RateSettings | None = None
) -> list[Candidate]:
    """The planner's candidates from what the project measured and priced: the newest benchmark
    step times per instance type (`gpu_benchmarks`) joined with the newest Linux prices
    (`latest_prices`, in `currency` only: a candidate has no currency of its own), and GPU memory
    per GPU from `instance_catalog` for that instance type, else the static catalog. Spot
    candidates carry an interruption rate from placement scores and price history
    (`rates_from_warehouse`); a place with neither gets the planner's default rate."""
    from finops.gpubench import pricing, store
    from finops.gpubench.report import latest_prices
    from finops.prices.gpu_models import known_instance

    measured = pricing.measured_from_rows(store.latest_rows(wh))
    prices = [p for p in latest_prices(wh) if p.currency == currency]
    spot = {(p.provider, p.region, p.instance_type) for p in prices if p.pricing_model == "spot"}
    rates = {k: r.rate_per_h for k, r in rates_from_warehouse(wh, spot, rate_settings).items()}
    try:
        rows = wh.query(
            "SELECT provider, instance_type, MAX(gpu_memory_gib) FROM instance_catalog "
            "WHERE gpu_memory_gib IS NOT NULL GROUP BY provider, instance_type"
        )
    except Exception:  # noqa: BLE001 - no catalog yet: the static table still answers
        rows = []
    memory = {(str(p), str(t)): float(g) for p, t, g in rows}
    out = []
    for c in candidates_from_offers(pricing.offers_for(measured, prices, rates)):
        mem = memory.get((c.provider, c.instance_type))
        if mem is None and (spec := known_instance(c.provider, c.instance_type)) is not None:
            mem = spec.gpu_memory_gib
        out.append(replace(c, gpu_memory_gib=None if mem is None else float(mem)))
    return out
