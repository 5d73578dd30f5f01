"""Serving cost: measured serving throughput joined with instance prices, in Decimal.

Pure (no Airflow, no warehouse, no torch). Definitions, for an instance at price P per hour
with G GPUs, each GPU serving one replica at the measured throughput (the benchmark runs one
GPU; CPU, network and host limits are not modelled):
- instance requests/s        R = G x requests/s per GPU   (the best batch under the P99 target)
- $ per 1,000 requests       = P / (3600 x R) x 1,000
- $ per 1M output tokens     = P / (3600 x G x output tokens/s per GPU) x 1,000,000
Rates are rounded half-up to RATE_QUANTUM (a millionth of the currency unit: a request costs
fractions of a cent); monthly money (fleet.py) is rounded to the cent.

A benchmark of an instance type stands for that type in every region it is priced in (the same
hardware); prices of types never benchmarked are listed as unmeasured, never guessed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from finops.exceptions import FinopsError

RATE_QUANTUM = Decimal("0.000001")
CENT = Decimal("0.01")
SECONDS_PER_HOUR = Decimal(3600)


class CostInputError(FinopsError, ValueError):
    """A price or a throughput that cannot be turned into a cost (missing, zero, negative)."""


def to_decimal(v: Any, what: str) -> Decimal:
    """Decimal of a price or a measured float (via its shortest repr: 0.1 stays 0.1)."""
    if v is None:
        raise CostInputError(f"{what} is missing")
    if isinstance(v, bool):
        raise CostInputError(f"{what} must be a number, got {v!r}")
    if isinstance(v, float) and not math.isfinite(v):
        raise CostInputError(f"{what} must be finite, got {v!r}")
    try:
        d = v if isinstance(v, Decimal) else Decimal(repr(v) if isinstance(v, float) else str(v))
    except ArithmeticError:
        raise CostInputError(f"{what} is not a number: {v!r}") from None
    if not d.is_finite():
        raise CostInputError(f"{what} must be finite, got {v!r}")
    return d


def rate(d: Decimal) -> Decimal:
    return d.quantize(RATE_QUANTUM, rounding=ROUND_HALF_UP)


def cents(d: Decimal) -> Decimal:
    return d.quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class UnitCosts:
    per_1k_requests: Decimal
    per_1m_output_tokens: Decimal | None  # None: the model emits no tokens (the CNN)


def unit_costs(
    price_per_hour: Any, requests_per_s: Any, output_tokens_per_s: Any = None, gpu_count: int = 1
) -> UnitCosts:
    """$ per 1,000 requests and per 1M output tokens at `price_per_hour` for an instance whose
    `gpu_count` GPUs each serve `requests_per_s` (and `output_tokens_per_s`)."""
    price = to_decimal(price_per_hour, "price per hour")
    if price < 0:
        raise CostInputError(f"price per hour must be >= 0, got {price}")
    if isinstance(gpu_count, bool) or not isinstance(gpu_count, int) or gpu_count < 1:
        raise CostInputError(f"gpu_count must be an integer >= 1, got {gpu_count!r}")
    rps = to_decimal(requests_per_s, "requests/s")
    if rps <= 0:
        raise CostInputError(f"requests/s must be > 0, got {rps}")
    per_req = price / (SECONDS_PER_HOUR * rps * gpu_count)
    per_tok = None
    if output_tokens_per_s is not None:
        tps = to_decimal(output_tokens_per_s, "output tokens/s")
        if tps <= 0:
            raise CostInputError(f"output tokens/s must be > 0, got {tps}")
        per_tok = rate(price / (SECONDS_PER_HOUR * tps * gpu_count) * 1_000_000)
    return UnitCosts(rate(per_req * 1000), per_tok)


@dataclass(frozen=True)
class PriceOffer:
    """One priced (cloud, region, instance type, pricing model): the shape of latest_prices."""

    provider: str
    region: str
    instance_type: str
    pricing_model: str  # "ondemand" | "spot"
    price_per_hour: Decimal
    currency: str = "USD"


@dataclass(frozen=True)
class ServingFigure:
    """One measured (instance type, model, dtype) at its best batch under the P99 target
    (batch None: no batch size met the target)."""

    provider: str
    instance_type: str
    gpu_model: str | None
    gpu_count: int
    model: str
    dtype: str
    p99_target_ms: float
    batch: int | None
    requests_per_s: float | None  # per GPU
    output_tokens_per_s: float | None  # per GPU
    p99_ms: float | None
    measured_at: str | None = None


def figures_from_doc(doc: Mapping[str, Any], provider: str, instance_type: str) -> list[ServingFigure]:
    """ServingFigures of one result document (its `serving.best` rows)."""
    sv = doc.get("serving") or {}
    dev = doc.get("device") or {}
    return [
        ServingFigure(
            provider,
            instance_type,
            dev.get("name"),
            int(dev.get("count") or 1),
            b["model"],
            b["dtype"],
            float(b["p99_target_ms"]),
            b.get("batch"),
            b.get("requests_per_s"),
            b.get("output_tokens_per_s"),
            b.get("p99_ms"),
            doc.get("finished_at"),
        )
        for b in sv.get("best", [])
    ]


def cost_matrix(figures: Iterable[ServingFigure], prices: Iterable[PriceOffer]) -> dict[str, Any]:
    """Every priced offer of a measured instance type x every (model, dtype) measured on it.

    Returns {"rows": [...], "unmeasured": [offers priced but never benchmarked],
    "unpriced": [(provider, instance_type) benchmarked but without any price]}. Rows are sorted
    by model, then $ per 1,000 requests (cheapest first; rows whose SLA no batch met last)."""
    figs = list(figures)
    offers = list(prices)
    by_type: dict[tuple[str, str], list[ServingFigure]] = {}
    for f in figs:
        by_type.setdefault((f.provider, f.instance_type), []).append(f)
    rows: list[dict[str, Any]] = []
    priced: set[tuple[str, str]] = set()
    unmeasured = []
    for o in offers:
        key = (o.provider, o.instance_type)
        if key not in by_type:
            unmeasured.append(
                {
                    "provider": o.provider,
                    "region": o.region,
                    "instance_type": o.instance_type,
                    "pricing_model": o.pricing_model,
                }
            )
            continue
        priced.add(key)
        price = to_decimal(o.price_per_hour, f"price of {o.provider} {o.region} {o.instance_type}")
        for f in by_type[key]:
            row: dict[str, Any] = {
                "provider": o.provider,
                "region": o.region,
                "instance_type": o.instance_type,
                "pricing_model": o.pricing_model,
                "gpu_model": f.gpu_model,
                "gpu_count": f.gpu_count,
                "model": f.model,
                "dtype": f.dtype,
                "p99_target_ms": f.p99_target_ms,
                "batch": f.batch,
                "p99_ms": f.p99_ms,
                "price_per_hour": price,
                "currency": o.currency,
                "requests_per_s": None,
                "output_tokens_per_s": None,
                "usd_per_1k_requests": None,
                "usd_per_1m_output_tokens": None,
                "note": "",
            }
            if f.batch is None or not f.requests_per_s:
                row["note"] = f"no batch size meets P99 <= {f.p99_target_ms:g} ms"
            else:
                c = unit_costs(price, f.requests_per_s, f.output_tokens_per_s, f.gpu_count)
                row.update(
                    requests_per_s=f.requests_per_s * f.gpu_count,
                    output_tokens_per_s=(
                        f.output_tokens_per_s * f.gpu_count if f.output_tokens_per_s is not None else None
                    ),
                    usd_per_1k_requests=c.per_1k_requests,
                    usd_per_1m_output_tokens=c.per_1m_output_tokens,
                )
            rows.append(row)
    rows.sort(
        key=lambda r: (
            r["model"],
            r["usd_per_1k_requests"] is None,
            r["usd_per_1k_requests"] or Decimal(0),
            r["provider"],
            r["region"],
            r["instance_type"],
            r["pricing_model"],
            r["dtype"],
        )
    )
    unpriced = sorted(k for k in by_type if k not in priced)
    return {"rows": rows, "unmeasured": unmeasured, "unpriced": [list(k) for k in unpriced]}


def offers_from_rows(rows: Sequence[Sequence[Any]]) -> list[PriceOffer]:
    """PriceOffers from (provider, region, instance_type, pricing_model, price_per_hour, currency)
    tuples (the latest_prices view's columns), prices kept exact."""
    return [
        PriceOffer(p, r, it, m, to_decimal(price, f"price of {p} {r} {it}"), cur or "USD")
        for p, r, it, m, price, cur in rows
    ]
