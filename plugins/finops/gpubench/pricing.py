"""Cost per unit of work: measured benchmark figures joined with instance prices.

Pure (no Airflow, no cloud SDK, no warehouse): plain dataclasses in, plain numbers out.
Derived figures are estimates and use floats; money that lands on an invoice never passes here.

Definitions (per instance, price P $/h, G GPUs, figures measured on one GPU):
- $ per TFLOP-hour  = P / (TFLOPS_per_gpu x G): the price of one hour of 1 TFLOPS sustained.
- $ per 1k steps    = (P / G) x step_s x 1000 / 3600: one GPU's share of the price for 1000
                      benchmark training steps (data-parallel jobs run G such streams at once).
- AMP saving        = 1 - step_amp / step_fp32 (the same work, fewer GPU-seconds).
- spot saving       = 1 - P_spot / P_ondemand.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Precision = str  # "fp32" | "amp_bf16" | "amp_fp16"


def usd_per_tflop_hour(price_per_hour: float, tflops_per_gpu: float, gpu_count: int = 1) -> float | None:
    if tflops_per_gpu <= 0 or gpu_count <= 0:
        return None
    return float(price_per_hour) / (tflops_per_gpu * gpu_count)


def usd_per_1k_steps(price_per_hour: float, step_time_ms: float, gpu_count: int = 1) -> float | None:
    if step_time_ms <= 0 or gpu_count <= 0:
        return None
    return float(price_per_hour) / gpu_count * step_time_ms / 3600.0


def amp_saving(fp32_step_ms: float, amp_step_ms: float) -> float | None:
    """Fraction of the fp32 cost saved by training with AMP on the same GPU."""
    if fp32_step_ms <= 0 or amp_step_ms <= 0:
        return None
    return 1.0 - amp_step_ms / fp32_step_ms


def spot_saving(spot_per_hour: float, ondemand_per_hour: float) -> float | None:
    if ondemand_per_hour <= 0:
        return None
    return 1.0 - float(spot_per_hour) / float(ondemand_per_hour)


# -- joining benchmark rows with prices -----------------------------------------------------


@dataclass(frozen=True)
class Price:
    provider: str
    region: str
    instance_type: str
    pricing_model: str  # "ondemand" | "spot"
    price_per_hour: float
    currency: str = "USD"


@dataclass(frozen=True)
class Measured:
    """Benchmark figures for one instance type (from `gpu_benchmarks`, newest run)."""

    provider: str
    region: str
    instance_type: str
    gpu_model: str | None
    gpu_count: int
    tflops: Mapping[str, float] = field(default_factory=dict)  # dtype -> TFLOPS per GPU
    step_ms: Mapping[Precision, float] = field(default_factory=dict)  # precision -> ms per step


def measured_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[Measured]:
    """Group `gpu_benchmarks` rows (dicts) into one Measured per (provider, region, instance type).

    Rows should be the newest run per key; when several remain, the later `measured_at` wins."""
    by_key: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: str(r.get("measured_at") or "")):
        key = (r["provider"], r["region"], r["instance_type"])
        m = by_key.setdefault(
            key,
            {
                "gpu_model": r.get("gpu_model"),
                "gpu_count": int(r.get("gpu_count") or 1),
                "tflops": {},
                "step_ms": {},
            },
        )
        if r["metric"] == "matmul_tflops" and r.get("dtype"):
            m["tflops"][r["dtype"]] = float(r["value"])
        elif r["metric"] == "train_step_time" and r.get("dtype"):
            m["step_ms"][r["dtype"]] = float(r["value"])
    return [Measured(p, reg, it, **v) for (p, reg, it), v in by_key.items()]


def price_performance(measured: Iterable[Measured], prices: Iterable[Price]) -> list[dict[str, Any]]:
    """One row per (instance, pricing model) with $/TFLOP-hour per dtype, $/1k steps per
    precision, the AMP saving and the spot saving. A price in another region does not match."""
    price_list = list(prices)
    index = {(p.provider, p.region, p.instance_type, p.pricing_model): p for p in price_list}
    out: list[dict[str, Any]] = []
    for m in measured:
        od = index.get((m.provider, m.region, m.instance_type, "ondemand"))
        for model in ("ondemand", "spot"):
            p = index.get((m.provider, m.region, m.instance_type, model))
            if p is None:
                continue
            row: dict[str, Any] = {
                "provider": m.provider,
                "region": m.region,
                "instance_type": m.instance_type,
                "pricing_model": model,
                "gpu_model": m.gpu_model,
                "gpu_count": m.gpu_count,
                "price_per_hour": p.price_per_hour,
                "currency": p.currency,
                "usd_per_tflop_hour": {
                    d: usd_per_tflop_hour(p.price_per_hour, t, m.gpu_count)
                    for d, t in sorted(m.tflops.items())
                },
                "usd_per_1k_steps": {
                    d: usd_per_1k_steps(p.price_per_hour, s, m.gpu_count)
                    for d, s in sorted(m.step_ms.items())
                },
                "amp_saving": {
                    d: amp_saving(m.step_ms["fp32"], s)
                    for d, s in sorted(m.step_ms.items())
                    if d != "fp32" and "fp32" in m.step_ms
                },
                # a saving is a ratio of two prices: only meaningful in one currency
                "spot_saving": spot_saving(p.price_per_hour, od.price_per_hour)
                if model == "spot" and od and od.currency == p.currency
                else None,
            }
            out.append(row)
    return out


# -- where to run a job ---------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """A training job in units of the benchmark's step (the GPT block stack, one GPU).

    steps: steps to run. precision: which measured step time applies.
    checkpoint_interval_h: hours of work between checkpoints. restart_overhead_h: hours from an
    interruption until training resumes (new instance, boot, reload). checkpoint_cost_h: hours
    spent writing one checkpoint. scaling_efficiency: multi-GPU data-parallel efficiency (0-1].
    spot_interruption_rate_per_h: used for spot offers that carry no rate of their own.
    """

    steps: int
    precision: Precision = "amp_bf16"
    checkpoint_interval_h: float = 0.5
    restart_overhead_h: float = 0.1
    checkpoint_cost_h: float = 0.0
    scaling_efficiency: float = 1.0
    spot_interruption_rate_per_h: float = 0.05


@dataclass(frozen=True)
class Offer:
    provider: str
    region: str
    instance_type: str
    pricing_model: str  # "ondemand" | "spot"
    price_per_hour: float
    gpu_count: int
    step_ms: Mapping[Precision, float]
    interruption_rate_per_h: float | None = None  # None -> the job's default for spot, 0 for on-demand
    gpu_model: str | None = None


@dataclass(frozen=True)
class Ranked:
    offer: Offer
    feasible: bool
    expected_cost: float | None = None
    expected_hours: float | None = None
    compute_hours: float | None = None  # wall hours without interruptions
    expected_interruptions: float = 0.0
    overhead_fraction: float = 0.0  # expected_hours / compute_hours - 1
    note: str = ""


def _rate(job: Job, offer: Offer) -> float:
    if offer.interruption_rate_per_h is not None:
        return max(offer.interruption_rate_per_h, 0.0)
    return job.spot_interruption_rate_per_h if offer.pricing_model == "spot" else 0.0


def expected_run(job: Job, offer: Offer) -> Ranked:
    """Expected wall hours and cost of `job` on `offer`.

    compute = steps x step_s / (G x efficiency) x (1 + checkpoint_cost / checkpoint_interval).
    Interruptions arrive at rate r per wall hour; each loses half a checkpoint interval of work
    on average plus the restart overhead: L = interval / 2 + restart. Every wall hour then holds
    r x L lost hours, so wall = compute / (1 - r x L), interruptions = r x wall. When r x L >= 1
    the job is expected never to finish: infeasible.
    """
    step = offer.step_ms.get(job.precision)
    if step is None or step <= 0:
        return Ranked(offer, False, note=f"no measured step time for {job.precision}")
    if offer.gpu_count <= 0:
        return Ranked(offer, False, note="no GPUs")
    eff = job.scaling_efficiency if offer.gpu_count > 1 else 1.0
    compute = job.steps * step / 1000.0 / 3600.0 / (offer.gpu_count * eff)
    if job.checkpoint_interval_h > 0:
        compute *= 1.0 + job.checkpoint_cost_h / job.checkpoint_interval_h
    rate = _rate(job, offer)
    lost_per_interruption = job.checkpoint_interval_h / 2.0 + job.restart_overhead_h
    lost_fraction = rate * lost_per_interruption
    if lost_fraction >= 1.0:
        return Ranked(
            offer,
            False,
            compute_hours=compute,
            note=f"interruptions ({rate:g}/h) lose {lost_per_interruption:g} h each: never finishes",
        )
    wall = compute / (1.0 - lost_fraction)
    return Ranked(
        offer,
        True,
        expected_cost=wall * float(offer.price_per_hour),
        expected_hours=wall,
        compute_hours=compute,
        expected_interruptions=rate * wall,
        overhead_fraction=wall / compute - 1.0 if compute else 0.0,
    )


def cheapest_place_to_run(
    job: Job,
    offers: Iterable[Offer],
    offered: Mapping[tuple[str, str], Collection[str]] | None = None,
) -> list[Ranked]:
    """Rank (provider, instance type, pricing model) offers for `job` by expected cost.

    Spot offers pay an interruption overhead (see `expected_run`): with the job's checkpoint
    interval and restart overhead, a cheap but often-interrupted spot offer can lose to
    on-demand. Ties go to the faster offer. Offers that cannot run the job (no step time for
    its precision, or interrupted faster than they progress) come last, with a note saying why.

    `offered` ((provider, region) -> instance types offered there, as
    `finops.prices.queries.offered_places` returns it): an offer whose region was checked and
    does not offer its type is never proposed (last, infeasible); an unchecked region is not judged.
    """
    ranked = [_not_offered(o, offered) or expected_run(job, o) for o in offers]
    ok = sorted((r for r in ranked if r.feasible), key=lambda r: (r.expected_cost, r.expected_hours))
    bad = [r for r in ranked if not r.feasible]
    return ok + bad


def _not_offered(offer: Offer, offered: Mapping[tuple[str, str], Collection[str]] | None) -> Ranked | None:
    types = None if offered is None else offered.get((offer.provider, offer.region))
    if types is None or offer.instance_type in types:
        return None
    return Ranked(
        offer, False, note=f"{offer.instance_type} is not offered in {offer.provider} {offer.region}"
    )


def offers_for(
    measured: Iterable[Measured],
    prices: Iterable[Price],
    interruption_rates: Mapping[tuple[str, str, str], float] | None = None,
) -> list[Offer]:
    """Build offers from benchmark figures and prices (one per priced pricing model).
    interruption_rates: (provider, region, instance_type) -> spot interruptions per hour."""
    rates = interruption_rates or {}
    by_key: dict[tuple[str, str, str], list[Price]] = {}
    for p in prices:
        by_key.setdefault((p.provider, p.region, p.instance_type), []).append(p)
    out = []
    for m in measured:
        for p in by_key.get((m.provider, m.region, m.instance_type), []):
            rate = rates.get((m.provider, m.region, m.instance_type)) if p.pricing_model == "spot" else 0.0
            out.append(
                Offer(
                    m.provider,
                    m.region,
                    m.instance_type,
                    p.pricing_model,
                    float(p.price_per_hour),
                    m.gpu_count,
                    dict(m.step_ms),
                    rate,
                    m.gpu_model,
                )
            )
    return out
