"""JSON endpoints of the inference-cost page: the serving cost matrix (every priced offer x every
model and precision measured on its instance type, at a P99 target) and fleet advice for a
traffic profile (GET only; finops.gpubench.serving_store / fleet do the work)."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from finops.ui.api import ReaderDep
from finops.ui.db import Reader
from finops.ui.queries import empty

router = APIRouter(prefix="/api/inference")

Ms = Annotated[float | None, Query(gt=0, le=3_600_000)]
Rps = Annotated[float, Query(ge=0, le=1e9)]
Hours = Annotated[float, Query(ge=0, le=24)]
Currency = Annotated[str, Query(pattern=r"^[A-Z]{3}$")]
TABLES = ("gpu_serving_benchmarks", "latest_prices")


def _targets(resnet50_p99_ms: float | None, decoder_p99_ms: float | None) -> dict[str, float]:
    return {k: v for k, v in (("resnet50", resnet50_p99_ms), ("decoder", decoder_p99_ms)) if v is not None}


def _extra_prices() -> list[Any]:
    """Configured fallback prices of benchmark targets (benchmarks.targets[].price_per_hour)."""
    from finops.gpubench.serving_cost import PriceOffer
    from finops.ui.queries import _bench_settings

    settings = _bench_settings()
    return [
        PriceOffer(t.provider, t.region, t.instance_type, t.pricing_model, Decimal(str(t.price_per_hour)))
        for t in (settings.targets if settings else [])
        if t.price_per_hour is not None
    ]


def _matrix(r: Reader, targets: dict[str, float]) -> dict[str, Any] | None:
    if not r.has(*TABLES):
        return None
    from finops.gpubench import serving_store

    return serving_store.matrix(r.warehouse, targets, _extra_prices())


@router.get("/matrix")
def matrix(
    r: ReaderDep, resnet50_p99_ms: Ms = None, decoder_p99_ms: Ms = None, currency: Currency = "USD"
) -> dict[str, Any]:
    """$ per 1,000 requests and per 1M output tokens per (offer, model, precision), cheapest first;
    P99 targets default to the ones each run was measured with."""
    m = _matrix(r, _targets(resnet50_p99_ms, decoder_p99_ms))
    if m is None:
        return empty(
            "no serving benchmark or price tables yet (missing: " + ", ".join(r.missing(*TABLES)) + ")"
        )
    from finops.gpubench.serving_store import jsonable

    rows = [x for x in m["rows"] if x["currency"] == currency]
    if not rows:
        return empty(
            f"no serving figures with a price in {currency} yet",
            unmeasured=len(m["unmeasured"]),
            unpriced=m["unpriced"],
        )
    return {
        "empty": False,
        "items": jsonable(rows),
        "currency": currency,
        "unpriced": m["unpriced"],
        "unmeasured": len(m["unmeasured"]),
    }


@router.get("/fleet")
def fleet_advice(
    r: ReaderDep,
    peak_rps: Rps,
    peak_hours: Hours,
    offpeak_rps: Rps,
    offpeak_hours: Hours,
    model: Literal["resnet50", "decoder"] = "decoder",
    guaranteed_rps: Annotated[float | None, Query(ge=0, le=1e9)] = None,
    max_utilisation: Annotated[float, Query(gt=0, le=1)] = 0.8,
    allow_spot: bool = True,
    p99_ms: Ms = None,
    currency: Currency = "USD",
) -> dict[str, Any]:
    """The cheapest on-demand base + spot burst fleet for a traffic profile, per month."""
    from finops.gpubench.fleet import FleetError, Traffic
    from finops.gpubench.serving_cost import CostInputError
    from finops.gpubench.serving_store import advise, jsonable

    m = _matrix(r, {model: p99_ms} if p99_ms else {})
    if m is None:
        return empty(
            "no serving benchmark or price tables yet (missing: " + ", ".join(r.missing(*TABLES)) + ")"
        )
    try:
        traffic = Traffic.of(
            peak_rps,
            peak_hours,
            offpeak_rps,
            offpeak_hours,
            guaranteed_rps=guaranteed_rps,
            max_utilisation=max_utilisation,
        )
        plan = advise(m["rows"], model, traffic, currency=currency, allow_spot=allow_spot)
    except (FleetError, CostInputError) as e:
        return empty(str(e))
    return {
        "empty": False,
        "model": model,
        "currency": currency,
        "plan": jsonable(plan.as_dict()),
        "traffic": {
            "peak_rps": peak_rps,
            "peak_hours": peak_hours,
            "offpeak_rps": offpeak_rps,
            "offpeak_hours": offpeak_hours,
            "guaranteed_rps": str(traffic.guaranteed),
            "max_utilisation": max_utilisation,
            "hours_per_month": str((24 * traffic.days_per_month).quantize(Decimal("0.01"))),
        },
    }
